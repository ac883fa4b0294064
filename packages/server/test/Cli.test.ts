/**
 * The `appexec` command on a temp data directory, as a user runs it: the first `serve` prints a
 * key and a curl line that work, the admin commands print only their result and act on the
 * database `serve` uses while it runs, transitions are logged, and SIGTERM exits cleanly; on
 * SQLite and on PostgreSQL alike.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { execFile, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { type AddressInfo, createServer as createNetServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { backends } from "./support/Backends.js"
import { bin } from "./support/Bin.js"

const greeting = fileURLToPath(new URL("../apps/greeting.json", import.meta.url))

/** Runs `appexec …args` to completion with `env` added to the environment; stdout, stderr and exit code. */
const appexecIn = (env: Record<string, string>) => (...args: Array<string>) =>
  Effect.async<{ stdout: string; stderr: string; code: number }>((resume) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, APPEXEC_LOG_FORMAT: "json", ...env } },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ stdout, stderr, code: error === null ? 0 : Number(error.code ?? 1) }))
    )
  })

const appexec = appexecIn({})

/** A running `serve` whose output is watched: `waitFor` resolves when stdout or stderr matches. */
const startServe = (dataDir: string, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--data", dataDir, "--rate-limit", "1000"], {
        env: { ...process.env, APPEXEC_LOG_FORMAT: "json", ...env }
      })
      const output = { stdout: "", stderr: "" }
      const watchers: Array<() => void> = []
      child.stdout.on("data", (d) => ((output.stdout += String(d)), watchers.forEach((w) => w())))
      child.stderr.on("data", (d) => ((output.stderr += String(d)), watchers.forEach((w) => w())))
      const waitFor = (pattern: RegExp, stream: "stdout" | "stderr") =>
        Effect.gen(function*() {
          const found = yield* Deferred.make<RegExpMatchArray>()
          const check = () => {
            const match = pattern.exec(output[stream])
            if (match !== null) Deferred.unsafeDone(found, Effect.succeed(match))
          }
          watchers.push(check)
          check()
          return yield* Deferred.await(found)
        })
      const exited = Effect.async<number | null>((resume) => {
        if (child.exitCode !== null) return resume(Effect.succeed(child.exitCode))
        child.once("exit", (code) => resume(Effect.succeed(code)))
      })
      return { child, output, waitFor, exited }
    }),
    ({ child }) =>
      Effect.sync(() => {
        if (child.exitCode === null) child.kill("SIGKILL")
      })
  )

const request = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    // The bodies are checked field by field below; their shape is the API's, tested in @appexec/http.
    return { status: response.status, body: (await response.json()) as any }
  })

describe("appexec command", () => {
  for (const backend of backends) {
    it.scoped(
      `serve bootstraps an empty ${backend.name} database; admin commands work beside it; SIGTERM exits cleanly`,
      () =>
        Effect.gen(function*() {
          const dataDir = yield* Effect.acquireRelease(
            Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-cli-"))),
            (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
          )
          const env = yield* backend.env
          const appexec = appexecIn(env)
          const serve = yield* startServe(dataDir, env)
          const [, curlKey, baseUrl] = yield* serve.waitFor(
            /curl -H 'x-api-key: (aex_[A-Za-z0-9_-]{43})' (http:\/\/127\.0\.0\.1:\d+)\/v1\/apps/,
            "stdout"
          )
          const key = curlKey!
          const listed = yield* request(`${baseUrl}/v1/apps`, { headers: { "x-api-key": key } })
          expect(listed.status).toBe(200)
          expect(listed.body.data.map((a: { name: string }) => a.name)).toContain("Greeting")

          const workspace = yield* appexec("workspaces", "create", "team", "--data", dataDir)
          expect(workspace.stdout).toMatch(/^[0-9a-f-]{36}\n$/)
          const teamKey = yield* appexec("keys", "create", "--workspace", "team", "--user", "ann", "--data", dataDir)
          expect(teamKey.code).toBe(0)
          expect(teamKey.stdout).toMatch(/^aex_[A-Za-z0-9_-]{43}\n$/)
          const team = teamKey.stdout.trim()
          const imported = yield* appexec("apps", "import", greeting, "--workspace", "team", "--data", dataDir)
          expect(imported.stdout).toMatch(/^[0-9a-f-]{36}\n$/)
          const appId = imported.stdout.trim()
          expect(
            (yield* request(`${baseUrl}/v1/apps/${appId}`, { headers: { authorization: `Bearer ${team}` } })).status
          )
            .toBe(200)
          expect((yield* request(`${baseUrl}/v1/apps/${appId}`, { headers: { "x-api-key": key } })).status).toBe(403)
          const apps = yield* appexec("apps", "list", "--data", dataDir)
          expect(apps.stdout).toContain(appId)

          const started = yield* request(`${baseUrl}/v1/apps/${appId}/executions`, {
            method: "POST",
            headers: { "x-api-key": team, "content-type": "application/json" },
            body: JSON.stringify({ inputs: { who: "Ann" } })
          })
          expect(started.status).toBe(202)
          const executionId: string = started.body.data.executionId
          yield* serve.waitFor(new RegExp(`execution ${executionId} completed`), "stderr")
          expect(serve.output.stderr).toContain(`execution ${executionId} queued`)
          expect(serve.output.stderr).toContain(`execution ${executionId} running`)
          // A transition's line carries the execution, its app and its status as fields.
          const queuedLine = serve.output.stderr.split("\n").find((line) =>
            line.includes(`"message":"execution ${executionId} queued"`)
          )
          expect(JSON.parse(queuedLine!)).toMatchObject({ level: "info", executionId, appId, status: "queued" })
          // Request lines are at DEBUG: the default level (INFO) leaves them out, so the printed key stays in view.
          expect(serve.output.stderr).not.toMatch(/"message":"(GET|POST) \/v1\//)
          const done = yield* request(`${baseUrl}/v1/executions/${executionId}`, { headers: { "x-api-key": team } })
          expect(done.body.data.outputs[0].value).toBe("Hello Ann, in a warm tone.")

          const revoked = yield* appexec("keys", "revoke", team.slice(0, 10), "--data", dataDir)
          expect(revoked.code).toBe(0)
          expect((yield* request(`${baseUrl}/v1/apps`, { headers: { "x-api-key": team } })).status).toBe(401)

          serve.child.kill("SIGTERM")
          expect(yield* serve.exited).toBe(0)
        }),
      60_000
    )
  }

  it.scoped(
    "keys create fails with a message on stderr for a bad option, printing nothing on stdout",
    () =>
      Effect.gen(function*() {
        const result = yield* appexec("keys", "create", "--data", tmpdir())
        expect(result.code).not.toBe(0)
        expect(result.stdout.trim()).not.toMatch(/^aex_/)
      }),
    30_000
  )

  it.scoped(
    "says why it failed: serve on a busy port, a command on a file that is not a database",
    () =>
      Effect.gen(function*() {
        const busy = createNetServer()
        const port = yield* Effect.async<number>((resume) => {
          busy.listen(0, "127.0.0.1", () => resume(Effect.succeed((busy.address() as AddressInfo).port)))
        })
        yield* Effect.addFinalizer(() => Effect.async<void>((resume) => void busy.close(() => resume(Effect.void))))
        const dataDir = mkdtempSync(join(tmpdir(), "appexec-cli-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dataDir, { recursive: true, force: true })))
        const served = yield* appexec("serve", "--port", String(port), "--data", dataDir)
        expect(served.code).toBe(1)
        expect(served.stderr).toContain(`appexec: listen EADDRINUSE: address already in use 127.0.0.1:${port}`)

        const corrupt = mkdtempSync(join(tmpdir(), "appexec-cli-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(corrupt, { recursive: true, force: true })))
        writeFileSync(join(corrupt, "appexec.db"), "this is not a database")
        const listed = yield* appexec("apps", "list", "--data", corrupt)
        expect(listed.code).toBe(1)
        expect(listed.stderr).toContain("file is not a database")
      }),
    60_000
  )
})
