/**
 * Polling benchmark: the requests one consumer sends for one execution that takes 10 seconds,
 * from its start to its result, with the client's `executions.wait` (`@appexec/client`) against
 * `appexec serve`, counted at the client's `fetch`: before, reading every 3–5 s (`hold: false`,
 * what the client did before long polling), with long polling (`Prefer: wait=N`), and on the
 * event stream (the client's default since live executions), one execution each.
 *
 * Figures, for each: the requests sent (the start included), the reads among them, and how long
 * after the execution ended the consumer had its result.
 */
import { createClient } from "@appexec/client"
import { Effect } from "effect"
import { join } from "node:path"
import type { Benchmark } from "./Benchmark.js"
import * as AppexecCommand from "./servers/appexec.js"
import * as TempDir from "./TempDir.js"

/** An app that answers after 10 seconds. */
const tenSeconds = {
  name: "Ten seconds",
  description: "Answers after 10 seconds",
  public: true,
  nodes: [
    { id: "message", type: "input.text", label: "Message", config: { name: "message", required: true } },
    { id: "wait", type: "util.delay", label: "Wait 10 s", config: { ms: 10_000 } },
    { id: "reply", type: "output.text", label: "Reply" }
  ],
  edges: [{ source: "message", target: "wait" }, { source: "wait", target: "reply" }]
}

/** `appexec serve` on a fresh data directory whose only app is `tenSeconds`. */
const serve = Effect.flatMap(
  TempDir.make("polling"),
  (dir) => AppexecCommand.serve(["--data", join(dir, "data"), "--apps", AppexecCommand.writeApps(dir, [tenSeconds])])
)

/** The benchmark. */
export const benchmark: Benchmark = {
  name: "polling",
  run: (report) =>
    Effect.gen(function*() {
      const { baseUrl, key } = yield* serve
      const sent: Array<string> = []
      const counting: typeof fetch = (input, init) => {
        sent.push(`${init?.method ?? "GET"} ${typeof input === "string" ? input : String(input)}`)
        return fetch(input, init)
      }
      const client = createClient({ baseUrl, apiKey: key, fetch: counting })
      const apps = yield* Effect.promise(() => client.apps.list())
      const app = apps.find((a) => a.name === tenSeconds.name)!
      const modes: ReadonlyArray<readonly [string, { readonly hold?: false; readonly live?: false }]> = [
        ["before", { hold: false, live: false }],
        ["after", { live: false }],
        ["stream", {}]
      ]
      for (const [mode, options] of modes) {
        sent.length = 0
        const done = yield* Effect.promise(async () => {
          const started = await client.executions.start(app.appId, { message: "hi" })
          return client.executions.wait(started.executionId, options)
        })
        const received = Date.now()
        if (done.status !== "completed" || done.completedAt === null) {
          return yield* Effect.fail(new Error(`the execution ended ${done.status}`))
        }
        yield* report({ name: `polling.wait.${mode}.requests`, value: sent.length, unit: "requests" })
        yield* report({
          name: `polling.wait.${mode}.reads`,
          value: sent.filter((r) => r.startsWith("GET ")).length,
          unit: "requests"
        })
        yield* report({
          name: `polling.wait.${mode}.result_after_completion`,
          value: Math.max(0, received - done.completedAt.getTime()),
          unit: "ms"
        })
      }
    }).pipe(Effect.scoped)
}
