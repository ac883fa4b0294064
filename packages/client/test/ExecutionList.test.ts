/**
 * The execution list and webhook redelivery through the client, against a served instance: a
 * page, every page as a `Stream` and as an async iterable (read as far as the loop goes), the
 * filters; a redelivered webhook that the client's own verification accepts, and the 409 of one
 * that cannot be.
 */
import { Appexec } from "@appexec/core"
import { TestHarness, TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import { AppexecClient, createClient } from "../src/index.js"
import { instance, serve } from "./ServedInstance.js"

/** A `fetch` that counts the requests it forwards, by `METHOD path?query`. */
const countingFetch = () => {
  const calls: Array<string> = []
  const fetch: typeof globalThis.fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : input.toString())
    calls.push(`${init?.method ?? "GET"} ${url.pathname}${url.search}`)
    return globalThis.fetch(input, init)
  }
  return { calls, fetch }
}

describe("the execution list through the client", () => {
  it.scoped("reads a page, every page as a Stream or an async iterable, filtered by status and app", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const appexec = yield* Appexec.Appexec
      const { calls, fetch } = countingFetch()
      const client = yield* AppexecClient.make({ baseUrl: served.baseUrl, apiKey: served.apiKey, fetch })
      // Five parses, the third of text that is not JSON (it fails), then a greeting still under way.
      const parses: Array<string> = []
      for (const text of ["1", "2", "nope", "4", "5"]) {
        const started = yield* client.executions.start(served.parseAppId, { text })
        yield* appexec.executions.await(started.executionId)
        parses.push(started.executionId)
      }
      const greeting = (yield* client.executions.start(served.greetingAppId, { who: "Ada" })).executionId
      const newestFirst = [greeting, ...[...parses].reverse()]

      const first = yield* client.executions.list({ limit: 2 })
      expect(first.data.map((e) => e.executionId)).toEqual(newestFirst.slice(0, 2))
      expect(first.data[0]).toMatchObject({ appId: served.greetingAppId, inputs: { who: "Ada", tone: "warm" } })
      const second = yield* client.executions.list({ limit: 2, cursor: first.nextCursor! })
      expect(second.data.map((e) => e.executionId)).toEqual(newestFirst.slice(2, 4))

      const all = yield* Stream.runCollect(client.executions.all({ limit: 2 }))
      expect(Chunk.toReadonlyArray(all).map((e) => e.executionId)).toEqual(newestFirst)
      const failed = yield* Stream.runCollect(client.executions.all({ status: "failed" }))
      expect(Chunk.toReadonlyArray(failed).map((e) => e.executionId)).toEqual([parses[2]])
      const ofParse = yield* client.executions.list({ appId: served.parseAppId, status: "completed" })
      expect(ofParse).toEqual({
        data: expect.arrayContaining([expect.objectContaining({ executionId: parses[0] })]),
        nextCursor: null
      })
      expect(ofParse.data).toHaveLength(4)

      // The Promise client: `for await` over every page, reading each page only when the loop reaches it.
      const promised = createClient({ baseUrl: served.baseUrl, apiKey: served.apiKey, fetch })
      calls.length = 0
      const seen: Array<string> = []
      yield* Effect.promise(async () => {
        for await (const execution of promised.executions.all({ limit: 2 })) {
          seen.push(execution.executionId)
          if (seen.length === 3) break
        }
      })
      expect(seen).toEqual(newestFirst.slice(0, 3))
      expect(calls.map((c) => c.replace(/cursor=[^&]+/, "cursor=…"))).toEqual([
        "GET /v1/executions?limit=2",
        "GET /v1/executions?limit=2&cursor=…"
      ])
      const page = yield* Effect.promise(() => promised.executions.list({ status: "running" }))
      expect(page.data.map((e) => e.executionId)).toEqual([greeting])

      const refused = yield* Effect.flip(client.executions.list({ limit: 500 }))
      expect(refused).toMatchObject({ _tag: "ApiError" })
    }).pipe(Effect.provide(instance)))
})

describe("webhook redelivery through the client", () => {
  it.scoped("redelivers a finished execution's webhook, which the client's verification accepts; 409 without one", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start()
      const served = yield* serve()
      const appexec = yield* Appexec.Appexec
      const client = yield* AppexecClient.make({ baseUrl: served.baseUrl, apiKey: served.apiKey })
      const hooked = yield* client.executions.start(served.parseAppId, { text: "[1]" }, { webhook: receiver.url() })
      yield* appexec.executions.await(hooked.executionId)
      const first = yield* receiver.next
      // Until the first attempt is recorded, the delivery is under way.
      for (let turn = 0; (yield* client.executions.webhook(hooked.executionId))?.status === "pending"; turn++) {
        if (turn > 100_000) return yield* Effect.dieMessage("the first delivery was not recorded")
        yield* Effect.yieldNow()
      }

      const delivery = yield* client.webhooks.redeliver(hooked.executionId)
      expect(delivery).toMatchObject({ url: receiver.url(), status: "pending", attempts: [{ statusCode: 200 }] })
      const again = yield* receiver.next
      const verified = yield* client.webhooks.verify(again.rawBody, again.headers)
      expect(verified.requestId).toBe(hooked.executionId)
      expect(verified.execution).toMatchObject({ appId: served.parseAppId, inputs: { text: "[1]" } })
      expect(new TextDecoder().decode(again.rawBody)).toBe(new TextDecoder().decode(first.rawBody))

      const plain = yield* client.executions.start(served.parseAppId, { text: "2" })
      yield* appexec.executions.await(plain.executionId)
      const refused = yield* Effect.flip(
        Effect.tryPromise(() =>
          createClient({ baseUrl: served.baseUrl, apiKey: served.apiKey }).webhooks.redeliver(plain.executionId)
        )
      )
      expect(refused.cause).toMatchObject({ _tag: "ApiError", status: 409, code: "webhook_not_redeliverable" })
    }).pipe(Effect.provide(TestHarness.layer({ webhooks: true }))))
})
