/**
 * Polling benchmark: the requests one consumer sends for one execution that takes 10 seconds,
 * from its start to its result, with the client's `executions.wait` (`@appexec/client`) against
 * `appexec serve`, counted at the client's `fetch`: before, reading every 3–5 s (`hold: false`,
 * what the client did before long polling), and after, with long polling (`Prefer: wait=N`, the
 * client's default), one execution each.
 *
 * Figures, for each: the requests sent (the start included), the reads among them, and how long
 * after the execution ended the consumer had its result.
 */
import { createClient } from "@appexec/client"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Benchmark } from "./Benchmark.js"

const root = fileURLToPath(new URL("../../../", import.meta.url))

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
const serve = Effect.acquireRelease(
  Effect.async<{ child: ChildProcess; key: string; baseUrl: string; dir: string }, Error>((resume) => {
    const dir = mkdtempSync(join(tmpdir(), "appexec-bench-polling-"))
    mkdirSync(join(dir, "apps"))
    writeFileSync(join(dir, "apps", "ten-seconds.json"), JSON.stringify(tenSeconds))
    const child = spawn(
      process.execPath,
      [
        join(root, "packages/server/dist/appexec.js"),
        "serve",
        "--port",
        "0",
        "--data",
        join(dir, "data"),
        "--apps",
        join(dir, "apps")
      ],
      { cwd: root, stdio: ["ignore", "pipe", "ignore"] }
    )
    let out = ""
    child.stdout!.on("data", (d) => {
      out += String(d)
      const match = /curl -H 'x-api-key: (aex_[A-Za-z0-9_-]+)' (http:\/\/[^\s]+)\/v1\/apps/.exec(out)
      if (match !== null) resume(Effect.succeed({ child, key: match[1]!, baseUrl: match[2]!, dir }))
    })
    child.once("exit", (code) => resume(Effect.fail(new Error(`appexec serve exited with ${code}`))))
  }),
  ({ child, dir }) =>
    Effect.async<void>((resume) => {
      const done = () => {
        rmSync(dir, { recursive: true, force: true })
        resume(Effect.void)
      }
      if (child.exitCode !== null) return done()
      child.once("exit", done)
      child.kill("SIGTERM")
    })
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
      const modes: ReadonlyArray<readonly [string, { readonly hold?: false }]> = [
        ["before", { hold: false }],
        ["after", {}]
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
