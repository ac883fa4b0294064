/**
 * Counted starts on PostgreSQL (`PostgresCountedStarts`): a start's rate-limit hit, its verdict,
 * the check of the key and app revisions and the insert of its execution, in one statement. The
 * hits of two processes on one schema are counted exactly, each its own count; an execution is
 * inserted exactly when `RateLimiter.decide` allows its hit (the statement's integer inequality,
 * checked against it across a window's edge) and its revisions are still the current ones; and,
 * through the facade, a key revoked by another process is refused (nothing inserted) although this
 * process's key cache still holds it.
 */
import { Ids } from "@appexec/api"
import { Appexec, AppexecLayer, CountedStarts, type ExecutionRecord, IdGenerator, RateLimiter } from "@appexec/core"
import { TestOutboundHttp } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import pg from "pg"
import * as TestDatabase from "./support/TestDatabase.js"

const database = TestDatabase.create("counted")
let schemas = 0

/** One process's storage on `schema`: its counted starts. */
const countedOn = (schema: string) =>
  Effect.map(
    Layer.build(TestDatabase.storageOn(database, schema)),
    (context) => Context.get(context, CountedStarts.CountedStarts)
  )

/** Runs `text` on the test database; its rows. */
const query = <R extends object>(text: string) =>
  Effect.gen(function*() {
    const client = new pg.Client({ connectionString: yield* Effect.promise(() => database) })
    yield* Effect.promise(() => client.connect())
    return yield* Effect.promise(() => client.query<R>(text)).pipe(
      Effect.ensuring(Effect.promise(() => client.end()))
    )
  }).pipe(Effect.map((result) => result.rows))

/** Both revisions of `schema` as they are now. */
const revisionsOf = (schema: string) =>
  Effect.map(
    query<{ keys: string; apps: string }>(
      `SELECT k.revision AS keys, a.revision AS apps FROM ${schema}.key_revision k, ${schema}.app_revision a`
    ),
    ([row]): CountedStarts.Revisions => ({ keys: Number(row!.keys), apps: Number(row!.apps) })
  )

const executionsIn = (schema: string) =>
  Effect.map(
    query<{ execution_id: string }>(`SELECT execution_id FROM ${schema}.executions ORDER BY execution_id`),
    (rows) => rows.map((row) => row.execution_id)
  )

let executions = 0

/** A queued execution with a fresh id. */
const recordOf = (): ExecutionRecord.ExecutionRecord => {
  const n = String(++executions).padStart(12, "0")
  return {
    executionId: Ids.ExecutionId.make(`00000000-0000-4000-8000-${n}`),
    workflowId: Ids.WorkflowId.make("00000000-0000-4000-8400-000000000001"),
    appId: Ids.AppId.make("00000000-0000-4000-8300-000000000001"),
    workspaceId: Ids.WorkspaceId.make("00000000-0000-4000-8100-000000000001"),
    userId: Ids.UserId.make("00000000-0000-4000-8200-000000000001"),
    status: "queued",
    inputs: { prompt: "hello" },
    outputs: [],
    errorMessage: null,
    webhookUrl: null,
    createdAt: 1,
    startedAt: null,
    completedAt: null
  }
}

const WINDOW = 60_000

describe("PostgreSQL counted starts", () => {
  it.live("two processes' hits are counted exactly, each its own count; only the allowed starts are inserted", () =>
    Effect.gen(function*() {
      const schema = `counted${++schemas}`
      const a = yield* countedOn(schema)
      const b = yield* countedOn(schema)
      const revisions = yield* revisionsOf(schema)
      const policy = { limit: 5, windowMs: WINDOW }
      const now = 100 * WINDOW + 1_000
      const starts = Array.from({ length: 8 }, (_, i) => ({
        key: "10.0.0.1",
        now,
        policy,
        record: recordOf(),
        revisions,
        through: i % 2 === 0 ? a : b
      }))
      // All at once: each process batches its own into one statement, and both count into one row.
      const outcomes = yield* Effect.forEach(starts, ({ through, ...start }) => through.start(start), {
        concurrency: "unbounded"
      })
      expect(outcomes.map((o) => o.counts.current).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
      outcomes.forEach((outcome, i) => {
        const decision = RateLimiter.decide(policy, now, now - (now % WINDOW), outcome.counts)
        expect(outcome.inserted, `start ${i} (count ${outcome.counts.current})`).toBe(decision.allowed)
      })
      const allowed = starts.filter((_, i) => outcomes[i]!.inserted).map((s) => s.record.executionId)
      expect(allowed).toHaveLength(5)
      expect(yield* executionsIn(schema)).toEqual([...allowed].sort())
      // The same counter as every other request's hit.
      const [row] = yield* query<{ count: number }>(`SELECT count FROM ${schema}.rate_limits WHERE key = '10.0.0.1'`)
      expect(row?.count).toBe(8)
    }).pipe(Effect.scoped))

  it.live("across a window's edge the statement allows exactly what RateLimiter.decide allows", () =>
    Effect.gen(function*() {
      const schema = `counted${++schemas}`
      const counted = yield* countedOn(schema)
      const revisions = yield* revisionsOf(schema)
      const policy = { limit: 4, windowMs: WINDOW }
      // Seven hits in one window (more than the limit: the previous share is capped at limit − 1).
      const first = 200 * WINDOW
      for (let i = 0; i < 7; i++) {
        yield* counted.start({ key: "edge", now: first + 10, policy, record: recordOf(), revisions })
      }
      let inserted = 4
      // In the next window, at several points: each start's fate is decide's.
      for (const elapsed of [0, 1, WINDOW / 4, WINDOW / 3, WINDOW / 2, WINDOW / 2 + 1, WINDOW - 1]) {
        yield* query(`UPDATE ${schema}.rate_limits SET window_start = ${first}, count = 7, previous = 0`)
        const now = first + WINDOW + elapsed
        for (let i = 0; i < 4; i++) {
          const outcome = yield* counted.start({ key: "edge", now, policy, record: recordOf(), revisions })
          expect(outcome.counts).toEqual({ current: i + 1, previous: 7 })
          const decision = RateLimiter.decide(policy, now, first + WINDOW, outcome.counts)
          expect(outcome.inserted, `elapsed ${elapsed}, hit ${i + 1}`).toBe(decision.allowed)
          if (outcome.inserted) inserted += 1
        }
      }
      expect(yield* executionsIn(schema)).toHaveLength(inserted)
    }).pipe(Effect.scoped))

  it.live("a start whose key or app revision moved is not inserted; its hit is counted", () =>
    Effect.gen(function*() {
      const schema = `counted${++schemas}`
      const counted = yield* countedOn(schema)
      const now = yield* revisionsOf(schema)
      const policy = { limit: 100, windowMs: WINDOW }
      const at = 300 * WINDOW
      const stale = [{ keys: now.keys - 1, apps: now.apps }, { keys: now.keys, apps: now.apps - 1 }]
      for (const [i, revisions] of stale.entries()) {
        const outcome = yield* counted.start({ key: "moved", now: at, policy, record: recordOf(), revisions })
        expect(outcome).toEqual({ counts: { current: i + 1, previous: 0 }, inserted: false })
      }
      expect(yield* executionsIn(schema)).toEqual([])
      const current = yield* counted.start({ key: "moved", now: at, policy, record: recordOf(), revisions: now })
      expect(current).toEqual({ counts: { current: 3, previous: 0 }, inserted: true })
    }).pipe(Effect.scoped))

  it.live("a key revoked by another process is refused by a counted start although this process's cache holds it", () =>
    Effect.gen(function*() {
      const schema = `counted${++schemas}`
      const instance = () =>
        Layer.build(
          AppexecLayer.make({ webhooks: false, config: { drainTimeout: 0 } }).pipe(
            Layer.provideMerge(TestDatabase.storageOn(database, schema)),
            Layer.provide(IdGenerator.IdGenerator.random),
            Layer.provide(TestOutboundHttp.layer)
          )
        ).pipe(Effect.map((context) => Context.get(context, Appexec.Appexec)))
      const api = yield* instance()
      const other = yield* instance()
      const app = yield* api.apps.import({
        name: "Echo",
        nodes: [
          { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
          { id: "echo", type: "output.text", label: "Echo" }
        ],
        edges: [{ source: "prompt", target: "echo" }]
      }, { owner: { public: true } })
      const created = yield* api.keys.create({ workspace: "w" })
      const headers = { "x-api-key": created.key }
      // The usual way once: the key and the app are cached.
      const principal = yield* api.keys.authenticate(headers)
      yield* api.executions.start(principal, app.appId, { prompt: "first" })
      const startCounted = api.executions.startCounted!
      const counting = (revision: number): CountedStarts.Counting => ({
        key: "client",
        now: 400 * WINDOW,
        policy: { limit: 100, windowMs: WINDOW },
        keyRevision: revision,
        decision: undefined
      })
      const cached = api.keys.cached(headers)!
      expect(cached.principal).toEqual(principal)
      const allowed = counting(cached.revision)
      expect(yield* startCounted(cached.principal, app.appId, { prompt: "second" }, {}, allowed)).toMatchObject({
        status: "queued"
      })
      expect(allowed.decision).toMatchObject({ allowed: true, remaining: 99 })
      expect(yield* executionsIn(schema)).toHaveLength(2)

      expect(yield* other.keys.revoke(created.record.apiKeyId)).toBe(1)
      // This process has not read the revision since: its cache still holds the key.
      const stale = api.keys.cached(headers)!
      expect(stale.principal).toEqual(principal)
      const refused = counting(stale.revision)
      expect(yield* startCounted(stale.principal, app.appId, { prompt: "third" }, {}, refused)).toBeUndefined()
      // Counted, allowed by the limit, not inserted: the caller authenticates again, and fails.
      expect(refused.decision).toMatchObject({ allowed: true, remaining: 98 })
      expect(yield* executionsIn(schema)).toHaveLength(2)
      expect(yield* Effect.flip(api.keys.authenticate(headers))).toMatchObject({ reason: "revoked" })
    }).pipe(Effect.scoped))
})
