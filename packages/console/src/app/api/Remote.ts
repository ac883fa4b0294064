/**
 * What the views share to read the API: the signed-in client (`useApi`) and `useRemote`, the state
 * of one read (loading, its value, or its error) that is made again when its inputs change and
 * abandoned when the view goes away.
 */
import { createContext } from "preact"
import { useContext, useEffect, useRef, useState } from "preact/hooks"
import { type Api, isAbort } from "./Api.js"

export const ApiContext = createContext<Api | undefined>(undefined)

/** The client of the signed-in key. */
export const useApi = (): Api => {
  const api = useContext(ApiContext)
  if (api === undefined) throw new Error("useApi outside a signed-in console")
  return api
}

/** The state of a read. */
export type Remote<A> =
  | { readonly state: "loading" }
  | { readonly state: "ready"; readonly value: A }
  | { readonly state: "failed"; readonly error: unknown }

/**
 * Reads `load` now and whenever `inputs` change; the previous read is aborted. `reload` reads
 * again, keeping the value shown until the new one comes.
 */
export const useRemote = <A>(
  load: (signal: AbortSignal) => Promise<A>,
  inputs: ReadonlyArray<unknown>
): [Remote<A>, () => void, (value: A) => void] => {
  const [remote, setRemote] = useState<Remote<A>>({ state: "loading" })
  const [round, setRound] = useState(0)
  const last = useRef<ReadonlyArray<unknown> | undefined>(undefined)
  useEffect(() => {
    const previous = last.current
    last.current = inputs
    const changed = previous === undefined || previous.length !== inputs.length ||
      inputs.some((input, i) => !Object.is(input, previous[i]))
    if (changed) setRemote({ state: "loading" })
    const controller = new AbortController()
    load(controller.signal).then(
      (value) => {
        if (!controller.signal.aborted) setRemote({ state: "ready", value })
      },
      (error: unknown) => {
        if (!controller.signal.aborted && !isAbort(error)) setRemote({ state: "failed", error })
      }
    )
    return () => controller.abort()
  }, [...inputs, round])
  return [remote, () => setRound((r) => r + 1), (value) => setRemote({ state: "ready", value })]
}

/** Whether `text` is an absolute `http:` or `https:` URL: the only URLs the console loads media from. */
export const isHttpUrl = (text: string | null | undefined): text is string => {
  if (text === null || text === undefined) return false
  try {
    const url = new URL(text)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}
