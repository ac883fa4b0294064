/**
 * Webhook URLs that will surely fail, over a real `appexec serve` process: a literal private,
 * loopback, link-local or metadata address is refused at start (400 `invalid_webhook_url`,
 * naming `--allow-private-networks`); a name that resolves to loopback is accepted and refused
 * at delivery, and the consumer sees that failure at `GET /v1/executions/{id}/webhook`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { startServe, tempDataDir } from "./support/ServeProcess.js"

interface Answer {
  readonly status: number
  readonly body: {
    readonly data?: { readonly executionId: string } & Record<string, unknown>
    readonly error?: { readonly code: string; readonly message: string }
  }
}

const call = (url: string, key: string, init: RequestInit = {}) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(url, {
      ...init,
      headers: { "x-api-key": key, "content-type": "application/json" }
    })
    return { status: response.status, body: await response.json() as Answer["body"] }
  })

describe("webhook URLs that will surely fail", () => {
  it.scopedLive(
    "are refused at start when literal, and a delivery refused later is visible to the consumer",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const serve = yield* startServe(dataDir, ["--rate-limit", "1000"])
        const apps = yield* call(`${serve.baseUrl}/v1/apps`, serve.key)
        const greeting = (apps.body.data as unknown as Array<{ appId: string; name: string }>).find((a) =>
          a.name === "Greeting"
        )!
        const start = (webhook: string) =>
          call(
            `${serve.baseUrl}/v1/apps/${greeting.appId}/executions?webhook=${encodeURIComponent(webhook)}`,
            serve.key,
            { method: "POST", body: JSON.stringify({ inputs: { who: "Ada" } }) }
          )
        for (
          const webhook of [
            "http://127.0.0.1:9/hook",
            "http://2130706433/hook",
            "http://0x7f.1/hook",
            "http://[::ffff:127.0.0.1]/hook",
            "http://10.0.0.8/hook",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/hook"
          ]
        ) {
          const refused = yield* start(webhook)
          expect([webhook, refused.status]).toEqual([webhook, 400])
          expect(refused.body.error?.code).toBe("invalid_webhook_url")
          expect(refused.body.error?.message).toContain("--allow-private-networks")
        }

        // A name is resolved at delivery: accepted now, refused then, and the consumer can see it.
        const accepted = yield* start("http://localhost:9/hook")
        expect(accepted.status).toBe(202)
        const executionId = accepted.body.data!.executionId
        const delivery = yield* call(`${serve.baseUrl}/v1/executions/${executionId}/webhook`, serve.key).pipe(
          Effect.filterOrFail((d) => (d.body.data as { status?: string } | null)?.status === "failed"),
          Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("20 seconds")))
        )
        expect(delivery.body.data).toMatchObject({
          url: "http://localhost:9/hook",
          status: "failed",
          attempts: [{ statusCode: null, error: expect.stringContaining("Address not allowed") }]
        })

        // An execution without a webhook has none; another workspace's execution is not found.
        const plain = yield* call(`${serve.baseUrl}/v1/apps/${greeting.appId}/executions`, serve.key, {
          method: "POST",
          body: JSON.stringify({ inputs: { who: "Ada" } })
        })
        const none = yield* call(`${serve.baseUrl}/v1/executions/${plain.body.data!.executionId}/webhook`, serve.key)
        expect(none).toEqual({ status: 200, body: { data: null } })
        const missing = yield* call(`${serve.baseUrl}/v1/executions/${crypto.randomUUID()}/webhook`, serve.key)
        expect(missing.status).toBe(404)
      }),
    60_000
  )
})
