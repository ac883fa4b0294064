/**
 * What an operator action of the admin port (a webhook's redelivery, with `--admin-actions`) must
 * carry to be taken (docs/operations.md#operator-views). The views take no key, so a page of
 * another site the operator visits could post to the private port through the operator's
 * browser: a form from a sandboxed frame (`Origin: null`), a `fetch` in `no-cors` mode. An action
 * is taken only when both hold:
 *
 * - it comes from the port's own page: `Sec-Fetch-Site`, when sent, is `same-origin`; `Origin`,
 *   when sent, names the host the request was sent to (`Host`) or the browser says `same-origin`,
 *   and is never `null`; a browser request (`Sec-Fetch-Site`, `-Dest` or `-User` sent) without
 *   `Origin` is refused. A request with neither is not a browser's (a script's, `curl`'s);
 * - it carries the admin listener's anti-forgery token in `X-Appexec-Action-Token`: made at random
 *   when the admin app is made, handed out only by `GET /operator` of that listener (which answers
 *   only its own `Host`, and which a page of another origin cannot read), and compared in constant
 *   time. The header itself makes a cross-origin `fetch` ask first (a CORS preflight), which the
 *   port never allows.
 */
import { IdGenerator } from "@appexec/core"
import { Effect } from "effect"
import * as ErrorAnswers from "./ErrorAnswers.js"
import type { ServerRequest, ServerResponse } from "./Exchange.js"

/** The header an action carries the token in (lower-case, as the app reads headers). */
export const TOKEN_HEADER = "x-appexec-action-token"

/** The token of one admin listener and the check of its actions. */
export interface ActionGuard {
  /** The token, for the operator page (`GET /operator`). */
  readonly token: string
  /** The 403 answer when `request` may not act, or none when it may. */
  readonly refusal: (request: ServerRequest) => ServerResponse | undefined
}

/** Bytes of randomness in a token. */
const TOKEN_BYTES = 32

const forbidden = (message: string) => ErrorAnswers.fromInfo({ code: "forbidden", message })

const refusals = {
  crossSite: (site: string) =>
    forbidden(
      `A request that a page of another origin sent (Sec-Fetch-Site: ${
        JSON.stringify(site.slice(0, 40))
      }) may not act on the admin port: act from the operator views' own page.`
    ),
  opaque: forbidden(
    "A request from an opaque origin (Origin: null, such as a sandboxed frame's) may not act on the admin port."
  ),
  foreign: forbidden("A request from another origin may not act on the admin port."),
  noOrigin: forbidden("A browser request without an Origin header may not act on the admin port."),
  noToken: forbidden(
    `An action needs the admin port's anti-forgery token in the X-Appexec-Action-Token header, as the operator ` +
      `views' page sends it (GET /operator gives it as actionToken; reload the page after a restart of appexec).`
  )
}

/** Whether `origin` (a URL) names the host the request was sent to (`Host`). */
const sameHost = (origin: string, host: string | undefined): boolean =>
  host !== undefined && URL.canParse(origin) && new URL(origin).host === host.toLowerCase()

/** Whether `a` and `b` are the same text, in a time that depends on their length only. */
const sameText = (a: string, b: string): boolean => {
  if (a.length !== b.length) return false
  let difference = 0
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return difference === 0
}

/**
 * Whether a browser sent `headers`: it adds `Sec-Fetch-Site` and `Sec-Fetch-Dest` to its requests
 * (to a loopback or HTTPS address), and no page can set them. `Sec-Fetch-Mode` alone is not a
 * browser's: Node's own `fetch` sends it.
 */
const fromBrowser = (headers: ServerRequest["headers"]) =>
  headers["sec-fetch-site"] !== undefined || headers["sec-fetch-dest"] !== undefined ||
  headers["sec-fetch-user"] !== undefined

/** The guard of a token taken from `globalThis.crypto` (`IdGenerator.random`). */
export const make: Effect.Effect<ActionGuard> = Effect.gen(function*() {
  const ids = yield* IdGenerator.IdGenerator
  const token = yield* ids.token(TOKEN_BYTES)
  const refusal = ({ headers }: ServerRequest): ServerResponse | undefined => {
    const site = headers["sec-fetch-site"]
    if (site !== undefined && site !== "same-origin") return refusals.crossSite(site)
    const origin = headers.origin
    if (origin === "null") return refusals.opaque
    if (origin !== undefined && site !== "same-origin" && !sameHost(origin, headers.host)) return refusals.foreign
    if (origin === undefined && fromBrowser(headers)) return refusals.noOrigin
    const sent = headers[TOKEN_HEADER]
    if (sent === undefined || !sameText(sent.trim(), token)) return refusals.noToken
    return undefined
  }
  return { token, refusal }
}).pipe(Effect.provide(IdGenerator.IdGenerator.random))
