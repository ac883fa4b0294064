import { Ids } from "@appexec/api"
import { createClient } from "@appexec/client"
import { Appexec, WebhookOutbox } from "@appexec/core"
import { NodeListener } from "@appexec/platform-node"
import { TestApps, TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Schedule } from "effect"
import { execFile, spawn } from "node:child_process"
import type { Server } from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import { createReceiver, describeWebhook } from "./receiver.mjs"

/** Listens on 127.0.0.1, port 0, until the scope closes; returns the base URL. */
const listen = (server: Server) =>
  Effect.acquireRelease(
    Effect.async<string>((resume) => {
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)))
    }),
    () =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() =>
          resume(Effect.void)
        )
      })
  )

const echo = TestApps.echo

const script = fileURLToPath(new URL("./receiver.mjs", import.meta.url))

/**
 * `node receiver.mjs` as the README runs it, on a free port, killed with the scope; `printed`
 * resolves with the first match of `pattern` on its stdout, and fails when it exits first.
 */
const runReceiver = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(process.execPath, [script], { env: { ...process.env, PORT: "0", ...env } })),
      (child) => Effect.sync(() => child.kill("SIGKILL"))
    )
    let stdout = ""
    let stderr = ""
    const watchers = new Set<() => void>()
    child.stdout.on("data", (chunk) => {
      stdout += String(chunk)
      watchers.forEach((watch) => watch())
    })
    child.stderr.on("data", (chunk) => (stderr += String(chunk)))
    const printed = (pattern: RegExp) =>
      Effect.async<RegExpExecArray, Error>((resume) => {
        const watch = () => {
          const match = pattern.exec(stdout)
          if (match !== null) resume(Effect.succeed(match))
        }
        const exited = (code: number | null) =>
          resume(Effect.fail(new Error(`receiver.mjs exited (${code}):\n${stdout}\n${stderr}`)))
        watchers.add(watch)
        child.once("exit", exited)
        watch()
        return Effect.sync(() => {
          watchers.delete(watch)
          child.off("exit", exited)
        })
      })
    return { printed }
  })

describe("example webhook receiver", () => {
  it.scopedLive("accepts appexec's signed webhook once, and answers 401 to a forged one", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const principal = yield* TestHarness.signIn()
      // appexec's own HTTP server, from which the receiver's client fetches the key set.
      const { url: appexecUrl } = yield* NodeListener.serve({ logRequests: false })
      const client = createClient({ baseUrl: appexecUrl, apiKey: principal.key })
      const completions: Array<string> = []
      const printed: Array<string> = []
      const refusals: Array<{ code: string; message: string; scheme: string }> = []
      const arrived = yield* Deferred.make<string>()
      const receiverUrl = yield* listen(
        createReceiver({
          client,
          onEvent: (delivery) => {
            completions.push(delivery.execution.executionId)
            printed.push(describeWebhook(delivery))
            Deferred.unsafeDone(arrived, Effect.succeed(delivery.execution.status))
          },
          onRefusal: (refusal) => refusals.push(refusal)
        })
      )
      const url = `${receiverUrl}/appexec-webhook`

      const app = yield* appexec.apps.import(echo)
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" }, { webhook: url })
      expect(yield* Deferred.await(arrived).pipe(Effect.timeout("5 seconds"))).toBe("completed")
      expect(completions).toEqual([started.executionId])
      expect(printed).toEqual([
        `verified completed webhook: execution ${started.executionId} completed\n  Result (text): echo: hi`
      ])

      const outbox = yield* WebhookOutbox.WebhookOutbox
      // The dispatcher records the attempt just after the receiver's answer reaches it.
      const [entry] = yield* outbox.forExecution(Ids.ExecutionId.make(started.executionId)).pipe(
        Effect.filterOrFail((entries) => entries[0]?.status !== "pending"),
        Effect.retry(Schedule.spaced("5 millis")),
        Effect.timeout("5 seconds")
      )
      expect(entry!.status).toBe("delivered")
      expect(entry!.attempts.map((a) => a.statusCode)).toEqual([204])

      const forged = yield* Effect.promise(() =>
        fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-service-webhook-timestamp": String(Math.floor(Date.now() / 1000)),
            "x-service-webhook-signature": "00".repeat(64)
          },
          body: JSON.stringify({ data: { executionId: started.executionId, status: "failed" } })
        })
      )
      expect(forged.status).toBe(401)
      expect(yield* Effect.promise(() => forged.json())).toEqual({ error: "bad_signature" })
      expect(completions).toEqual([started.executionId])
      expect(refusals).toEqual([
        { code: "bad_signature", message: expect.stringMatching(/signature/i), scheme: "service" }
      ])

      // The service's signature alone is not enough: the Standard Webhooks one must verify too.
      const half = yield* Effect.promise(() =>
        fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-service-webhook-timestamp": String(Math.floor(Date.now() / 1000)),
            "x-service-webhook-signature": "00".repeat(64),
            "webhook-id": "msg_forged",
            "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
            "webhook-signature": `v1a,${Buffer.alloc(64).toString("base64")}`
          },
          body: "{}"
        })
      )
      expect(half.status).toBe(401)
      expect(refusals).toHaveLength(2)
    }).pipe(Effect.provide(TestHarness.layer({ webhooks: true }))))

  it.scopedLive("says why it refuses a webhook when its key cannot fetch the key set", () =>
    Effect.gen(function*() {
      yield* TestHarness.signIn()
      const { url: appexecUrl } = yield* NodeListener.serve({ logRequests: false })
      const refusals: Array<{ code: string; message: string }> = []
      const receiverUrl = yield* listen(
        createReceiver({
          client: createClient({ baseUrl: appexecUrl, apiKey: "aex_not-a-key", retry: { maxRetries: 0 } }),
          onEvent: () => undefined,
          onRefusal: (refusal) => refusals.push(refusal)
        })
      )
      const answer = yield* Effect.promise(() =>
        fetch(receiverUrl, {
          method: "POST",
          headers: {
            "x-service-webhook-timestamp": String(Math.floor(Date.now() / 1000)),
            "x-service-webhook-signature": "00".repeat(64)
          },
          body: "{}"
        })
      )
      expect(answer.status).toBe(401)
      expect(yield* Effect.promise(() => answer.json())).toEqual({ error: "key_set_unavailable" })
      expect(refusals).toHaveLength(1)
      expect(refusals[0]!.message).toBe(
        "the signing key set could not be fetched: the server answered 401 unauthorized: The API key is malformed." +
          " Is APPEXEC_API_KEY a key of that server?"
      )
    }).pipe(Effect.provide(TestHarness.layer({ webhooks: true }))))

  it.scopedLive("run as the README runs it, verifies both signatures and prints each event: status, outputs, lines", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const principal = yield* TestHarness.signIn()
      const { url: appexecUrl } = yield* NodeListener.serve({ logRequests: false })
      const receiver = yield* runReceiver({ APPEXEC_BASE_URL: appexecUrl, APPEXEC_API_KEY: principal.key })
      const [, receiverUrl] = yield* receiver.printed(/receiving appexec webhooks on (http:\/\/\S+\/)/).pipe(
        Effect.timeout("30 seconds")
      )
      const app = yield* appexec.apps.import(TestApps.branches)
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "Ada" }, {
        webhook: `${receiverUrl}appexec-webhook`,
        webhookEvents: ["start", "logs", "completed"]
      })
      const id = started.executionId
      const [start] = yield* receiver.printed(/verified start webhook: .*\n/).pipe(Effect.timeout("30 seconds"))
      expect(start).toBe(`verified start webhook: execution ${id} running\n`)
      const [lines] = yield* receiver.printed(/verified logs webhook: .*\n( {2}.*\n)+(?=verified|$)/).pipe(
        Effect.timeout("30 seconds")
      )
      expect(lines).toContain("  [talk] line 1\n")
      const [end] = yield* receiver.printed(/verified completed webhook: .*\n.*\n.*\n/).pipe(
        Effect.timeout("30 seconds")
      )
      expect(end).toBe(
        `verified completed webhook: execution ${id} completed\n  Fast (text): Ada!\n  Slow (text): Ada\n`
      )
    }).pipe(Effect.provide(TestHarness.layer({ webhooks: true, nodes: [TestApps.chatty] }))))

  it("exits with a message naming APPEXEC_API_KEY when it has no key", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: "0" }
    delete env["APPEXEC_API_KEY"]
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        [script],
        { env, timeout: 10_000 },
        (error, _stdout, stderr) => resolve({ code: error === null ? 0 : child.exitCode, stderr })
      )
    })
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/APPEXEC_API_KEY is not set/)
  })
})
