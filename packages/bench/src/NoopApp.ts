/**
 * The app of the queue benchmarks (queue, scaling, graphile), its input straight to its output so
 * that a figure measures the queue and not the work, and how they set it up.
 */
import { Appexec } from "@appexec/core"
import { Effect } from "effect"

/** A public app whose only node passes its input `in` to its output. */
export const noop = {
  name: "No-op",
  public: true,
  nodes: [
    { id: "in", type: "input.text", label: "In", config: { name: "in", required: true } },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [{ source: "in", target: "out" }]
}

/** Imports `noop` into the `Appexec` in context and makes a key of workspace `bench`: the instance, the app's id, the key's principal. */
export const setUp = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const app = yield* appexec.apps.import(noop, { owner: { public: true } })
  const { key } = yield* appexec.keys.create({ workspace: "bench" })
  const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
  return { appexec, appId: app.appId, principal }
})
