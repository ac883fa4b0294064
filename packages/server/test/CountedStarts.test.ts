/**
 * Starts through two API processes on one PostgreSQL database (docs/storage.md#starts-on-postgresql):
 * once a process holds the key and the app in its caches, a start's rate-limit hit is counted by
 * the statement that inserts it. Both processes count one limit, each start its own count; a start
 * over the limit is answered 429 and inserts nothing; the 202 answer and its headers are those of
 * a start made the usual way (the first on each process); and a key revoked by another process is
 * refused at once, its start not inserted, although the API process still holds it in its cache.
 * A start refused before the statement (a 400), or sent with an `Idempotency-Key`, goes the usual
 * way: its hit is counted once, and over the limit it is answered 429 before anything else; so
 * does a POST that is not a start.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { postgres, query } from "./support/Backends.js"
import { restartServe, spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

const echoApp = {
  name: "Echo",
  public: true,
  nodes: [
    { id: "message", type: "input.text", label: "Message", config: { name: "message", required: true } },
    { id: "reply", type: "output.text", label: "Reply" }
  ],
  edges: [{ source: "message", target: "reply" }]
}

/**
 * `POST /v1/apps/{appId}/executions` with `key` and `inputs` (`{ message }` for a string), and
 * `headers`: the status, the headers and the parsed body.
 */
const start = (
  baseUrl: string,
  key: string,
  appId: string,
  inputs: string | Record<string, unknown>,
  headers: Record<string, string> = {}
) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}/v1/apps/${appId}/executions`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json", ...headers },
      body: JSON.stringify({ inputs: typeof inputs === "string" ? { message: inputs } : inputs })
    })
    // Only the fields read below matter; the shapes are the API's, tested in @appexec/http.
    return { status: response.status, headers: response.headers, body: (await response.json()) as any }
  })

/**
 * Waits, if need be, until the rate limit's window (a minute of the real clock, as `serve` counts
 * it) has 5 s left at least, so that the exact counts a test reads all fall in one window.
 */
const withinOneWindow = Effect.suspend(() => {
  const left = 60_000 - (Date.now() % 60_000)
  return left >= 5_000 ? Effect.void : Effect.sleep(left + 50)
})

/** Two API processes on a fresh database with `--rate-limit limit`, the Echo app imported. */
const twoApis = (limit: number) =>
  Effect.gen(function*() {
    const env = yield* postgres.env
    const apps = yield* tempDataDir
    writeFileSync(join(apps, "echo.json"), JSON.stringify(echoApp))
    const args = ["--no-worker", "--rate-limit", String(limit), "--apps", apps]
    const a = yield* startServe(yield* tempDataDir, args, env)
    const b = yield* restartServe(yield* tempDataDir, args, env)
    const [app] = yield* query<{ app_id: string }>(env, "SELECT app_id FROM apps WHERE name = 'Echo'")
    const executions = Effect.map(
      query<{ n: number }>(env, "SELECT count(*)::int AS n FROM executions"),
      ([row]) => row!.n
    )
    return { env, a, b, key: a.key, appId: app!.app_id, executions }
  })

describe("counted starts on PostgreSQL", () => {
  it.live(
    "two API processes count one limit, each start its own count; a start over it inserts nothing; the answer is unchanged",
    () =>
      Effect.gen(function*() {
        const { a, appId, b, executions, key } = yield* twoApis(10)
        yield* withinOneWindow
        const answers = yield* Effect.forEach(
          Array.from({ length: 13 }, (_, i) => i),
          (i) => start((i % 2 === 0 ? a : b).baseUrl, key, appId, `hello ${i}`)
        )
        expect(answers.map((answer) => answer.status)).toEqual([...Array(10).fill(202), 429, 429, 429])
        expect(answers.slice(0, 10).map((answer) => answer.headers.get("ratelimit-remaining"))).toEqual(
          Array.from({ length: 10 }, (_, i) => String(9 - i))
        )
        expect(yield* executions).toBe(10)
        // The first start of each process went the usual way (nothing cached yet); the later ones
        // were counted by their inserts: the same answer, field for field and header for header.
        const [usual, counted] = [answers[0]!, answers[4]!]
        expect(counted.body).toEqual({
          data: {
            executionId: expect.stringMatching(/^[0-9a-f-]{36}$/),
            workflowId: usual.body.data.workflowId,
            status: "queued",
            webhookUrl: null,
            outputs: [{ id: "reply", label: "Reply", type: "pending", value: null, status: "pending", error: null }]
          }
        })
        expect(Object.keys(counted.body.data)).toEqual(Object.keys(usual.body.data))
        expect([...counted.headers.keys()].filter((name) => name !== "date").sort()).toEqual(
          [...usual.headers.keys()].filter((name) => name !== "date").sort()
        )
        expect(counted.headers.get("ratelimit-limit")).toBe("10")
        expect(counted.headers.get("content-type")).toBe(usual.headers.get("content-type"))
        const over = answers[12]!
        expect(over.body.error.code).toBe("rate_limited")
        expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0)
        expect(over.headers.get("ratelimit-remaining")).toBe("0")
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "a start refused before the statement, or with an Idempotency-Key, goes the usual way: counted once, 429 before 400",
    () =>
      Effect.gen(function*() {
        const { a, appId, executions, key } = yield* twoApis(5)
        yield* withinOneWindow
        const remaining = (answer: { readonly headers: Headers }) => answer.headers.get("ratelimit-remaining")
        const first = yield* start(a.baseUrl, key, appId, "fills the caches")
        expect([first.status, remaining(first)]).toEqual([202, "4"])
        const invalid = yield* start(a.baseUrl, key, appId, { nope: "x" })
        expect([invalid.status, invalid.body.error.code, remaining(invalid)]).toEqual([400, "invalid_inputs", "3"])
        const once = { "idempotency-key": "order-1" }
        const keyed = yield* start(a.baseUrl, key, appId, "keyed", once)
        const again = yield* start(a.baseUrl, key, appId, "keyed", once)
        expect([keyed.status, remaining(keyed), again.status, remaining(again)]).toEqual([202, "2", 202, "1"])
        expect(again.body.data.executionId).toBe(keyed.body.data.executionId)
        const last = yield* start(a.baseUrl, key, appId, "last")
        expect([last.status, remaining(last)]).toEqual([202, "0"])
        const over = yield* start(a.baseUrl, key, appId, { nope: "x" })
        expect([over.status, over.body.error.code]).toEqual([429, "rate_limited"])
        expect(yield* executions).toBe(3)
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "a POST that is not a start goes the usual way, counted once: a cancel, a method the route does not take, no route",
    () =>
      Effect.gen(function*() {
        const { a, appId, key } = yield* twoApis(10)
        yield* withinOneWindow
        const post = (path: string) =>
          Effect.promise(async () => {
            const response = await fetch(`${a.baseUrl}${path}`, { method: "POST", headers: { "x-api-key": key } })
            return [response.status, response.headers.get("ratelimit-remaining")] as const
          })
        const first = yield* start(a.baseUrl, key, appId, "fills the caches")
        expect([first.status, first.headers.get("ratelimit-remaining")]).toEqual([202, "9"])
        const executionId: string = first.body.data.executionId
        expect(yield* post(`/v1/executions/${executionId}/cancel`)).toEqual([202, "8"])
        expect(yield* post("/v1/apps")).toEqual([405, "7"])
        expect(yield* post("/v1/nothing-here")).toEqual([404, "6"])
        const counted = yield* start(a.baseUrl, key, appId, "counted by its insert")
        expect([counted.status, counted.headers.get("ratelimit-remaining")]).toEqual([202, "5"])
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "a key revoked through another process is refused at once, its start not inserted",
    () =>
      Effect.gen(function*() {
        const { a, appId, env, executions, key } = yield* twoApis(1000)
        // The first start goes the usual way and fills the caches; the later ones are counted by their inserts.
        for (let i = 0; i < 3; i++) expect((yield* start(a.baseUrl, key, appId, `before ${i}`)).status).toBe(202)
        const revoke = yield* spawnAppexec(["keys", "revoke", key, "--data", yield* tempDataDir], env)
        expect((yield* revoke.exited("30 seconds")).code).toBe(0)
        const refused = yield* start(a.baseUrl, key, appId, "after")
        expect(refused.status).toBe(401)
        expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer/)
        expect(refused.headers.get("ratelimit-remaining")).toBe("996")
        expect(yield* executions).toBe(3)
      }).pipe(Effect.scoped),
    60_000
  )
})
