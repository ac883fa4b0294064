/**
 * `appexec serve` as a process, at its two edges: shutdown and the first start. On SIGTERM it
 * stops answering before the worker drains, exits 0, and a restart on the same data directory
 * runs what was left. A broken app definition is reported and skipped on the first start, and a
 * first start that never finished (or never ran) completes on the next one.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { copyFileSync, writeFileSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { backends } from "./support/Backends.js"
import { bin } from "./support/Bin.js"
import { restartServe, startServe, tempDataDir } from "./support/ServeProcess.js"

const greeting = fileURLToPath(new URL("../apps/greeting.json", import.meta.url))

/** An app that waits 12 s: longer than the worker's 10 s drain, short enough to run again after a restart. */
const delayApp = {
  name: "Twelve-second echo",
  public: true,
  nodes: [
    { id: "message", type: "input.text", label: "Message", config: { name: "message", required: true } },
    { id: "wait", type: "util.delay", label: "Wait 12 s", config: { ms: 12_000 } },
    { id: "reply", type: "output.text", label: "Reply" }
  ],
  edges: [
    { source: "message", target: "wait" },
    { source: "wait", target: "reply" }
  ]
}

/**
 * One request on a connection of its own (no keep-alive pool, so a refusal is the listener's),
 * answered within 5 s: the status, or the connection error's code.
 */
const probe = (url: string, method: string, key: string, body?: unknown) =>
  Effect.async<{ readonly status: number } | { readonly error: string }>((resume) => {
    const req = httpRequest(url, {
      method,
      agent: false,
      headers: { "x-api-key": key, "content-type": "application/json" }
    }, (res) => {
      res.resume()
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0 })))
    })
    req.on("error", (error: NodeJS.ErrnoException) => resume(Effect.succeed({ error: error.code ?? error.message })))
    req.end(body === undefined ? undefined : JSON.stringify(body))
    return Effect.sync(() => req.destroy())
  }).pipe(
    Effect.timeoutFail({
      duration: "5 seconds",
      onTimeout: () => new Error(`${method} ${url} got no answer within 5 s`)
    })
  )

const json = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    // Only the fields read below matter; the shapes are the API's, tested in @appexec/http.
    return { status: response.status, body: (await response.json()) as any }
  })

/** Polls an execution every 200 ms until it is completed or failed, for at most `attempts` polls. */
const awaitEnd = (baseUrl: string, key: string, executionId: string, attempts: number) =>
  Effect.gen(function*() {
    for (let attempt = 0;; attempt++) {
      const polled = yield* json(`${baseUrl}/v1/executions/${executionId}`, { headers: { "x-api-key": key } })
      const status: string = polled.body.data.status
      if ((status !== "queued" && status !== "running") || attempt === attempts) return polled.body.data
      yield* Effect.sleep("200 millis")
    }
  })

/** Runs `appexec …args` with `env` added to the environment to completion, bounded by 30 s. */
const appexec = (env: Record<string, string>, ...args: Array<string>) =>
  Effect.async<{ stdout: string; stderr: string; code: number }>((resume) => {
    const child = execFile(
      process.execPath,
      [bin, ...args],
      {
        env: { ...process.env, APPEXEC_LOG_FORMAT: "json", ...env },
        timeout: 30_000
      },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ stdout, stderr, code: error === null ? 0 : Number(error.code ?? 1) }))
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

for (const backend of backends) {
  describe(`appexec serve on ${backend.name}: shutdown`, () => {
    it.live(
      "on SIGTERM it refuses new requests while the worker drains, exits 0, and the next start finishes the execution",
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const appsDir = yield* tempDataDir
          const env = yield* backend.env
          writeFileSync(join(appsDir, "delay.json"), JSON.stringify(delayApp))
          const serve = yield* startServe(dataDir, ["--apps", appsDir, "--rate-limit", "1000"], env)
          const apps = yield* json(`${serve.baseUrl}/v1/apps`, { headers: { "x-api-key": serve.key } })
          const app = apps.body.data.find((a: { name: string }) => a.name === delayApp.name)
          const executionsUrl = `${serve.baseUrl}/v1/apps/${app.appId}/executions`
          const started = yield* probe(executionsUrl, "POST", serve.key, { inputs: { message: "hello" } })
          expect(started).toEqual({ status: 202 })
          const queued = yield* serve.waitFor(/"message":"execution ([0-9a-f-]{36}) running"/, "stderr", "10 seconds")
          const executionId = queued[1]!

          serve.child.kill("SIGTERM")
          // Shutdown has begun once either the server says it stopped listening or the worker says it drains.
          yield* serve.waitFor(/stopped accepting requests|worker stopping/, "stderr", "10 seconds")
          const refusedStart = yield* probe(executionsUrl, "POST", serve.key, { inputs: { message: "too late" } })
          const refusedList = yield* probe(`${serve.baseUrl}/v1/apps`, "GET", serve.key)
          // Refused by a process that is still draining, not by a dead one.
          expect(serve.child.exitCode).toBeNull()
          expect(refusedStart).toEqual({ error: "ECONNREFUSED" })
          expect(refusedList).toEqual({ error: "ECONNREFUSED" })

          // The 12 s execution outlives the 10 s drain; the process exits cleanly all the same.
          const exit = yield* serve.exited("20 seconds")
          expect(exit).toEqual({ code: 0, signal: null })

          const again = yield* restartServe(dataDir, ["--apps", appsDir, "--rate-limit", "1000"], env)
          // The restarted process runs it: the drain released it unfinished.
          yield* again.waitFor(new RegExp(`"message":"execution ${executionId} completed"`), "stderr", "20 seconds")
          const done = yield* awaitEnd(again.baseUrl, serve.key, executionId, 100)
          expect(done.status).toBe("completed")
          expect(done.outputs[0].value).toBe("hello")
          again.child.kill("SIGTERM")
          expect(yield* again.exited("20 seconds")).toEqual({ code: 0, signal: null })
        }).pipe(Effect.scoped),
      90_000
    )
  })

  describe(`appexec serve on ${backend.name}: first start`, () => {
    it.live(
      "a malformed app file is reported and skipped: the good app is imported, the key printed once",
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const appsDir = yield* tempDataDir
          const env = yield* backend.env
          copyFileSync(greeting, join(appsDir, "a-greeting.json"))
          writeFileSync(join(appsDir, "broken.json"), "{ broken")
          const first = yield* startServe(dataDir, ["--apps", appsDir], env)
          expect(first.output.stderr).toContain("Imported 1 public app(s): Greeting.")
          yield* first.waitFor(/broken\.json/, "stderr", "5 seconds")
          const listed = yield* json(`${first.baseUrl}/v1/apps`, { headers: { "x-api-key": first.key } })
          expect(listed.status).toBe(200)
          expect(listed.body.data.map((a: { name: string }) => a.name)).toEqual(["Greeting"])
          first.child.kill("SIGTERM")
          expect(yield* first.exited("15 seconds")).toEqual({ code: 0, signal: null })

          const second = yield* restartServe(dataDir, ["--apps", appsDir], env)
          yield* second.waitFor(/Create an API key with/, "stderr", "5 seconds")
          expect(second.output.stdout).not.toContain("API key of workspace")
          expect(second.output.stderr).not.toContain("Imported")
          const again = yield* json(`${second.baseUrl}/v1/apps`, { headers: { "x-api-key": first.key } })
          expect(again.status).toBe(200)
          expect(again.body.data.map((a: { name: string }) => a.name)).toEqual(["Greeting"])
        }).pipe(Effect.scoped),
      60_000
    )

    it.live(
      "a database that exists but was never bootstrapped gets its key and apps on the next start",
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const appsDir = yield* tempDataDir
          const env = yield* backend.env
          copyFileSync(greeting, join(appsDir, "greeting.json"))
          // An admin command creates the database without a workspace, as an interrupted first start leaves it.
          const listed = yield* appexec(env, "apps", "list", "--data", dataDir)
          expect(listed).toMatchObject({ code: 0, stdout: "" })
          const serve = yield* startServe(dataDir, ["--apps", appsDir], env)
          expect(serve.output.stderr).toContain("Imported 1 public app(s): Greeting.")
          const apps = yield* json(`${serve.baseUrl}/v1/apps`, { headers: { "x-api-key": serve.key } })
          expect(apps.status).toBe(200)
        }).pipe(Effect.scoped),
      60_000
    )
  })
}
