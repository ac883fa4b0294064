/**
 * The execution list over a real socket (docs/api.md#list-executions): the caller's workspace
 * only, newest first, filtered by status and app, paged by an opaque cursor; each item is the
 * execution as polling answers it, with `appId` and the inputs as accepted; a bad query is a 400
 * that names what was wrong.
 */
import { Api } from "@appexec/api"
import { Appexec } from "@appexec/core"
import { HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Encoding, Schema, TestClock } from "effect"
import { errorOf, get, seed, send, slowApp, stack } from "./fixtures.js"

type Item = { readonly executionId: string; readonly [field: string]: unknown }
type Page = { readonly data: ReadonlyArray<Item>; readonly nextCursor: string | null }

const start = (appId: string, key: string, inputs: Record<string, string>) =>
  Effect.map(
    send(
      HttpClientRequest.post(`/v1/apps/${appId}/executions`).pipe(
        HttpClientRequest.setHeader("x-api-key", key),
        HttpClientRequest.bodyText(JSON.stringify({ inputs }), "application/json")
      )
    ),
    (answer) => {
      expect(answer.status).toBe(202)
      return (answer.body as { readonly data: Item }).data.executionId
    }
  )

/** One page of `GET /v1/executions?query`, checked against the API's own schema. */
const list = (key: string, query: string) =>
  Effect.map(get(`/v1/executions${query === "" ? "" : `?${query}`}`, key), (answer) => {
    expect(answer.status, JSON.stringify(answer.body)).toBe(200)
    Schema.decodeUnknownSync(Api.listExecutions.successSchema)(answer.body)
    return answer.body as Page
  })

/** Every page of `query`, following `nextCursor`. */
const allPages = (key: string, query: string) =>
  Effect.gen(function*() {
    const pages: Array<Page> = []
    let cursor: string | null = null
    do {
      const page: Page = yield* list(key, `${query}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
      pages.push(page)
      cursor = page.nextCursor
    } while (cursor !== null && pages.length < 10)
    return pages
  })

const ids = (page: Page) => page.data.map((item) => item.executionId)

describe("GET /v1/executions", () => {
  it.scoped("lists the caller's executions newest first, by status and app, in pages, and no one else's", () =>
    Effect.gen(function*() {
      const { alice, bob, echo, secret } = yield* seed
      const appexec = yield* Appexec.Appexec
      const slow = yield* appexec.apps.import(slowApp, { owner: { public: true } })

      const echoes: Array<string> = []
      for (let n = 1; n <= 7; n++) {
        echoes.push(yield* start(echo.appId, alice.key, { prompt: `p${n}` }))
        yield* appexec.executions.await(echoes.at(-1)!)
      }
      const secrets: Array<string> = []
      for (const prompt of ["s1", "s2"]) {
        secrets.push(yield* start(secret.appId, alice.key, { prompt, style: "loud" }))
        yield* appexec.executions.await(secrets.at(-1)!)
      }
      const canceled = yield* start(slow.appId, alice.key, { prompt: "w1" })
      const running = yield* start(slow.appId, alice.key, { prompt: "w2" })
      yield* TestClock.adjust("1 second")
      yield* appexec.executions.cancel(canceled, alice)
      yield* appexec.executions.await(canceled)
      const bobs: Array<string> = []
      for (const prompt of ["b1", "b2", "b3"]) {
        bobs.push(yield* start(echo.appId, bob.key, { prompt }))
        yield* appexec.executions.await(bobs.at(-1)!)
      }
      const newestFirst = (started: ReadonlyArray<string>) => [...started].reverse()

      // Three pages of the completed executions of one app: 3, 3 and 1, the last without a cursor.
      const pages = yield* allPages(alice.key, `status=completed&appId=${echo.appId}&limit=3`)
      expect(pages.map(ids)).toEqual([
        newestFirst(echoes).slice(0, 3),
        newestFirst(echoes).slice(3, 6),
        newestFirst(echoes).slice(6)
      ])
      expect(pages.map((page) => page.nextCursor === null)).toEqual([false, false, true])

      // Without a filter, 20 by default: all of alice's, none of bob's.
      const whole = yield* list(alice.key, "")
      expect(ids(whole)).toEqual(newestFirst([...echoes, ...secrets, canceled, running]))
      expect(whole.nextCursor).toBeNull()
      expect(ids(yield* list(alice.key, "status=failed"))).toEqual([canceled])
      expect(ids(yield* list(alice.key, "status=running"))).toEqual([running])
      expect(yield* list(alice.key, "status=queued")).toEqual({ data: [], nextCursor: null })
      expect(ids(yield* list(alice.key, `appId=${secret.appId}`))).toEqual(newestFirst(secrets))
      expect(ids(yield* list(alice.key, `appId=${slow.appId}&status=completed`))).toEqual([])

      // Bob sees his own only, whatever the filter or the cursor.
      expect(ids(yield* list(bob.key, ""))).toEqual(newestFirst(bobs))
      expect(ids(yield* list(bob.key, `appId=${secret.appId}`))).toEqual([])
      expect(yield* list(bob.key, `cursor=${pages[0]!.nextCursor}`)).toEqual({ data: [], nextCursor: null })

      // Each item is the execution as polling answers it: appId and the inputs as accepted, defaults applied.
      for (const item of whole.data) {
        const polled = yield* get(`/v1/executions/${item.executionId}`, alice.key)
        expect(item).toEqual((polled.body as { readonly data: Item }).data)
      }
      const first = whole.data.find((item) => item.executionId === echoes[0])!
      expect(first).toMatchObject({ appId: echo.appId, status: "completed", inputs: { prompt: "p1", style: "plain" } })
      expect(Object.keys(first)).toEqual([
        "executionId",
        "workflowId",
        "appId",
        "status",
        "outputs",
        "inputs",
        "errorMessage",
        "startedAt",
        "completedAt",
        "createdAt",
        "attempt"
      ])
    }).pipe(Effect.provide(stack())))

  it.scoped("a bad limit, status, appId or cursor is 400 invalid_request naming it", () =>
    Effect.gen(function*() {
      const { alice } = yield* seed
      const cursorOf = (text: string) => Encoding.encodeBase64Url(text)
      for (
        const [query, named] of [
          ["limit=0", "'limit'"],
          ["limit=101", "'limit'"],
          ["limit=ten", "'limit'"],
          ["limit=1.5", "'limit'"],
          ["status=done", "'status'"],
          ["status=Completed", "'status'"],
          ["appId=not-a-uuid", "'appId'"],
          ["cursor=%21%21", "'cursor'"],
          [`cursor=${cursorOf("abc")}`, "'cursor'"],
          [`cursor=${cursorOf("0")}`, "'cursor'"],
          [`cursor=${cursorOf("12")}=`, "'cursor'"]
        ] as const
      ) {
        const refused = yield* get(`/v1/executions?${query}`, alice.key)
        expect(refused.status, query).toBe(400)
        expect(errorOf(refused.body).code, query).toBe("invalid_request")
        expect(errorOf(refused.body).message, query).toContain(named)
      }
      expect((yield* get("/v1/executions")).status).toBe(401)
    }).pipe(Effect.provide(stack())))
})
