/**
 * Every setting applies where its work runs, over real processes on one SQLite data directory
 * (docs/cli.md#settings): retention runs in the processes that run executions — a `worker` given
 * `retention` by the config file deletes what is past it at start; the outbound address policy is
 * one setting every role reads alike — with `allow-hosts` in one shared config file, a webhook to
 * an allowed loopback receiver is accepted by `serve --no-worker` and delivered by the `worker`,
 * another port of it refused at start naming the setting and the process; the admin port keeps
 * its own address whatever `--host` is; the worker's banner names its public URL.
 */
import { TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { appexecRun, spawnAppexec, spawnServe, startServe, tempDataDir } from "./support/ServeProcess.js"

interface Answer {
  readonly status: number
  readonly body: {
    readonly data?: unknown
    readonly error?: { readonly code: string; readonly message: string }
  }
}

const call = (url: string, key: string, init: RequestInit = {}) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(url, { ...init, headers: { "x-api-key": key, "content-type": "application/json" } })
    return { status: response.status, body: await response.json() as Answer["body"] }
  })

describe("settings apply where their work runs", () => {
  it.scopedLive("worker takes retention (here from the config file) and deletes past it", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const serve = yield* startServe(dataDir)
      const ran = yield* appexecRun(["Greeting", "--input", "who=Ada"], serve, {})
      expect(ran.code).toBe(0)
      serve.child.kill("SIGTERM")
      expect((yield* serve.exited("20 seconds")).code).toBe(0)
      const listed = yield* spawnAppexec(["executions", "list", "--data", dataDir])
      yield* listed.exited("20 seconds")
      expect(listed.output.stdout).toContain("completed")

      const config = join(dataDir, "appexec.json")
      writeFileSync(config, JSON.stringify({ retention: "1ms" }))
      const worker = yield* spawnAppexec(["worker", "--data", dataDir, "--config", config])
      yield* worker.waitFor(/retention: deleted 1 finished execution/, "stderr", "30 seconds")
      const after = yield* spawnAppexec(["executions", "list", "--data", dataDir])
      yield* after.exited("20 seconds")
      expect(after.output.stdout.trim()).toBe("")
    }), 120_000)

  it.scopedLive(
    "one allow-list for every role: serve --no-worker accepts a webhook to an allowed host, the worker delivers it",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const receiver = yield* TestReceiver.start()
        const config = join(dataDir, "appexec.json")
        writeFileSync(config, JSON.stringify({ "allow-hosts": [`127.0.0.1:${receiver.port}`], "rate-limit": 1000 }))
        // The main port on another loopback address: the admin port stays on 127.0.0.1.
        const api = yield* spawnServe(dataDir, [
          "--no-worker",
          "--config",
          config,
          "--host",
          "127.0.0.2",
          "--admin-port",
          "0"
        ])
        const [, key, baseUrl] = yield* api.waitFor(
          /curl -H 'x-api-key: (aex_[A-Za-z0-9_-]+)' (http:\/\/127\.0\.0\.2:\d+)\/v1\/apps/,
          "stdout"
        )
        expect(api.output.stderr).toMatch(/Metrics: http:\/\/127\.0\.0\.1:\d+\/metrics/)
        const worker = yield* spawnAppexec([
          "worker",
          "--data",
          dataDir,
          "--config",
          config,
          "--public-url",
          baseUrl!,
          "--admin-port",
          "0"
        ])
        yield* worker.waitFor(new RegExp(`appexec worker is running \\(data: .*; public URL ${baseUrl}\\)`), "stderr")
        const [, metrics] = yield* worker.waitFor(/Metrics: (http:\/\/127\.0\.0\.1:\d+)\/metrics/, "stderr")
        expect((yield* Effect.promise(() => fetch(`${metrics}/healthz`))).status).toBe(200)

        const apps = yield* call(`${baseUrl}/v1/apps`, key!)
        const greeting = (apps.body.data as Array<{ appId: string; name: string }>).find((a) => a.name === "Greeting")!
        const start = (webhook: string) =>
          call(`${baseUrl}/v1/apps/${greeting.appId}/executions?webhook=${encodeURIComponent(webhook)}`, key!, {
            method: "POST",
            body: JSON.stringify({ inputs: { who: "Ada" } })
          })
        const accepted = yield* start(receiver.url("/hook"))
        expect(accepted.status).toBe(202)
        const delivered = yield* receiver.next
        expect(delivered.executionId).toBe((accepted.body.data as { executionId: string }).executionId)
        expect(JSON.parse(new TextDecoder().decode(delivered.rawBody))).toMatchObject({ data: { status: "completed" } })

        // Another port of the same host is not on the list: refused at start, naming the setting and the process.
        const refused = yield* start("http://127.0.0.1:9/hook")
        expect(refused.status).toBe(400)
        expect(refused.body.error?.code).toBe("invalid_webhook_url")
        expect(refused.body.error?.message).toContain(
          "its host 127.0.0.1 is a loopback address, which appexec serve --no-worker reaches only when allowed: " +
            "--allow-hosts 127.0.0.1:9, or --allow-private-networks"
        )
      }),
    120_000
  )
})
