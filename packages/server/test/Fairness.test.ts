/**
 * `appexec serve --max-running-per-workspace N` as a process: one workspace never runs more than
 * N executions at once, and another workspace's execution runs beside its backlog.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { bin } from "./support/Bin.js"
import { startServe, tempDataDir } from "./support/ServeProcess.js"

const slowApp = {
  name: "Slow echo",
  public: true,
  nodes: [
    { id: "message", type: "input.text", label: "Message", config: { name: "message", required: true } },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms: 1_500 } },
    { id: "reply", type: "output.text", label: "Reply" }
  ],
  edges: [
    { source: "message", target: "wait" },
    { source: "wait", target: "reply" }
  ]
}

const json = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, body: (await response.json()) as any }
  })

const createKey = (dataDir: string, workspace: string) =>
  Effect.async<string>((resume) => {
    execFile(
      process.execPath,
      [bin, "keys", "create", "--workspace", workspace, "--data", dataDir],
      { timeout: 30_000 },
      (error, stdout) => resume(error === null ? Effect.succeed(stdout.trim()) : Effect.die(error))
    )
  })

describe("appexec serve --max-running-per-workspace", () => {
  it.live(
    "caps one workspace's running executions; another workspace's runs beside its backlog",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const appsDir = yield* tempDataDir
        writeFileSync(join(appsDir, "slow.json"), JSON.stringify(slowApp))
        const serve = yield* startServe(dataDir, [
          "--apps",
          appsDir,
          "--rate-limit",
          "1000",
          "--max-running-per-workspace",
          "1"
        ])
        const other = yield* createKey(dataDir, "other")
        const apps = yield* json(`${serve.baseUrl}/v1/apps`, { headers: { "x-api-key": serve.key } })
        const app = apps.body.data.find((a: { name: string }) => a.name === slowApp.name)
        const start = (key: string) =>
          json(`${serve.baseUrl}/v1/apps/${app.appId}/executions`, {
            method: "POST",
            headers: { "x-api-key": key, "content-type": "application/json" },
            body: JSON.stringify({ inputs: { message: "x" } })
          }).pipe(Effect.map((r) => r.body.data.executionId as string))
        const backlog = [yield* start(serve.key), yield* start(serve.key), yield* start(serve.key)]
        const single = yield* start(other)
        const statusOf = (key: string) => (id: string) =>
          json(`${serve.baseUrl}/v1/executions/${id}`, { headers: { "x-api-key": key } }).pipe(
            Effect.map((r) => r.body.data.status as string)
          )
        yield* Effect.sleep("700 millis")
        const early = yield* Effect.forEach(backlog, statusOf(serve.key))
        expect(early.filter((s) => s === "running").length).toBe(1)
        expect(early.filter((s) => s === "queued").length).toBe(2)
        expect(yield* statusOf(other)(single)).toBe("running")
        yield* Effect.sleep("1500 millis")
        expect(yield* statusOf(other)(single)).toBe("completed")
        const later = yield* Effect.forEach(backlog, statusOf(serve.key))
        expect(later.filter((s) => s === "running").length).toBe(1)
      }).pipe(Effect.scoped),
    60_000
  )

  it.live("refuses a cap below 1", () =>
    Effect.async<{ code: number; stderr: string }>((resume) => {
      execFile(
        process.execPath,
        [bin, "serve", "--port", "0", "--max-running-per-workspace", "0"],
        { timeout: 30_000 },
        (error, _stdout, stderr) =>
          resume(Effect.succeed({ code: error === null ? 0 : Number(error.code ?? 1), stderr }))
      )
    }).pipe(
      Effect.map(({ code, stderr }) => {
        expect(code).not.toBe(0)
        expect(stderr).toContain("--max-running-per-workspace")
      })
    ), 30_000)
})
