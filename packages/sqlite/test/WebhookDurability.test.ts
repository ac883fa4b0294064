/**
 * Webhook durability with real processes on one SQLite file (issue 5): a `kill -9` while
 * deliveries are pending and one is mid-attempt loses none of them, and two dispatcher
 * processes on one file never send the same attempt twice. The receiver is a real HTTP server
 * in the test process; every request it gets is checked with node:crypto against the key set
 * the instance publishes.
 */
import { Appexec, AppexecLayer, IdGenerator, SigningKeys } from "@appexec/core"
import { SqliteStorage } from "@appexec/sqlite"
import { TestOutboundHttp, TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, Layer } from "effect"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { spawnInstance, waitUntil } from "./fixtures/processes.js"
import { recordApp, recordNode } from "./fixtures/recordNode.js"

const script = fileURLToPath(new URL("./fixtures/webhookInstance.ts", import.meta.url))

/** An instance in the test process that neither runs executions nor delivers webhooks. */
const instanceOn = (filename: string) =>
  AppexecLayer.make({ nodes: [recordNode], worker: false, webhooks: false }).pipe(
    Layer.provide(SqliteStorage.layer({ filename })),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(TestOutboundHttp.layer)
  )

/** A temporary database seeded with the recorder app and an API key. */
const seeded = Effect.gen(function*() {
  const dir = yield* Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-webhook-durability-"))),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  )
  const db = join(dir, "appexec.db")
  const { appId, key, userId } = yield* Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(recordApp(5), { owner: { public: true } })
    const created = yield* appexec.keys.create({ workspace: "webhooks", user: "tester" })
    const principal = yield* appexec.keys.authenticate({ "x-api-key": created.key })
    return { appId: app.appId, key: created.key, userId: principal.userId }
  }).pipe(Effect.provide(instanceOn(db)))
  return { db, appId, key, userId, env: { APPEXEC_TEST_DB: db, APPEXEC_TEST_KEY: key, APPEXEC_TEST_APP: appId } }
})

/** One outbox row as stored. */
interface OutboxRow {
  readonly executionId: string
  readonly status: string
  readonly attempts: ReadonlyArray<
    { readonly at: number; readonly statusCode: number | null; readonly error: string | null }
  >
}

/** The outbox of the file, read with a connection of its own. */
const outbox = (filename: string): ReadonlyArray<OutboxRow> => {
  const db = new Database(filename)
  try {
    db.pragma("busy_timeout = 5000")
    const rows = db.prepare("SELECT execution_id, status, attempts FROM webhook_outbox ORDER BY seq").all() as Array<{
      execution_id: string
      status: string
      attempts: string
    }>
    return rows.map((r) => ({ executionId: r.execution_id, status: r.status, attempts: JSON.parse(r.attempts) }))
  } finally {
    db.close()
  }
}

const rowOf = (filename: string, executionId: string) => outbox(filename).find((r) => r.executionId === executionId)

/** The published key set, read through the signing-key port of the same file. */
const publishedKeys = (filename: string) =>
  Effect.flatMap(SigningKeys.SigningKeys, (k) => k.keySet).pipe(Effect.provide(instanceOn(filename)))

/** The process that sent a request: fixtures tag each with `x-test-pid`. */
const pidOf = (request: TestReceiver.Received) => Number(request.headers["x-test-pid"])

describe("webhook durability with real processes", () => {
  it.scopedLive(
    "kill -9 with deliveries pending and mid-attempt: after a restart every delivery arrives, signed, each attempt recorded",
    () =>
      Effect.gen(function*() {
        const { db, env, userId } = yield* seeded
        // Before the kill: the first execution to arrive is held open (mid-attempt); the others
        // get 500 twice, and their third attempt is held open as well.
        let held: string | undefined
        const receiver = yield* TestReceiver.start((arrival) => {
          held ??= arrival.executionId
          return arrival.executionId === held || arrival.number > 2 ? "hold" : 500
        })
        const first = yield* spawnInstance(
          {
            ...env,
            APPEXEC_TEST_START: "5",
            APPEXEC_TEST_WEBHOOK: receiver.url(),
            APPEXEC_TEST_RETRY_DELAYS_MS: "300,300,300,300",
            APPEXEC_TEST_WEBHOOK_TIMEOUT_MS: "6000",
            APPEXEC_TEST_CLAIM_MARGIN_MS: "500"
          },
          script
        )
        const accepted = (yield* first.waitForLines("accepted ", 5, 20_000)).map((l) => l.slice("accepted ".length))
        yield* waitUntil(
          "the held delivery, and two failed attempts recorded for each other execution",
          () =>
            accepted.every((id) => id === held ? receiver.of(id).length === 1 : rowOf(db, id)?.attempts.length === 2),
          15_000
        )
        yield* first.kill9
        const arrivedBefore = receiver.received.length

        const before = outbox(db)
        expect(before.map((r) => r.status)).toEqual(["pending", "pending", "pending", "pending", "pending"])
        expect(rowOf(db, held!)!.attempts).toEqual([])
        for (const id of accepted.filter((id) => id !== held)) {
          expect(rowOf(db, id)!.attempts.map((a) => a.statusCode)).toEqual([500, 500])
        }
        const midAttempt = receiver.received.filter((a) => a.answer === "hold")
        expect(midAttempt.map((a) => a.executionId)).toContain(held)

        // After the restart the receiver accepts everything.
        receiver.setPolicy(() => 200)
        const second = yield* spawnInstance(
          {
            ...env,
            APPEXEC_TEST_RETRY_DELAYS_MS: "300,300,300,300",
            APPEXEC_TEST_WEBHOOK_TIMEOUT_MS: "6000",
            APPEXEC_TEST_CLAIM_MARGIN_MS: "500"
          },
          script
        )
        yield* waitUntil("every delivery to be delivered", () => {
          const rows = outbox(db)
          return rows.length === 5 && rows.every((r) => r.status === "delivered")
        }, 20_000)
        yield* second.kill9

        const keys = (yield* publishedKeys(db)).keys
        expect(receiver.received.length).toBeGreaterThan(arrivedBefore)
        for (const arrival of receiver.received) {
          expect(TestReceiver.verifiedByNodeCrypto(keys, arrival)).toBe(true)
          expect(arrival.headers["x-service-webhook-user-id"]).toBe(userId)
          expect(Math.abs(Number(arrival.headers["x-service-webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(300)
          expect(JSON.parse(new TextDecoder().decode(arrival.rawBody)).data.executionId).toBe(arrival.executionId)
        }
        for (const id of accepted) {
          const arrivals = receiver.of(id)
          const after = arrivals.slice(arrivals.findIndex((a) => pidOf(a) === second.pid))
          // Exactly one attempt after the restart, sent by the new process and accepted.
          expect(after.map((a) => [pidOf(a), a.answer])).toEqual([[second.pid, 200]])
          expect(arrivals.filter((a) => pidOf(a) !== second.pid).every((a) => pidOf(a) === first.pid)).toBe(true)
          // Every answered attempt is recorded, in order; the ones cut short by the kill are not.
          const answered = arrivals.filter((a) => a.answer !== "hold").map((a) => a.answer)
          expect(rowOf(db, id)!.attempts.map((a) => a.statusCode)).toEqual(answered)
          expect(answered.at(-1)).toBe(200)
        }
      }),
    40_000
  )

  it.scopedLive(
    "two dispatcher processes on one file never send the same attempt twice",
    () =>
      Effect.gen(function*() {
        const { db, env, key, appId } = yield* seeded
        const receiver = yield* TestReceiver.start((arrival) => (arrival.number < 3 ? 500 : 200))
        const settings = {
          ...env,
          APPEXEC_TEST_RETRY_DELAYS_MS: "300,300",
          APPEXEC_TEST_WEBHOOK_TIMEOUT_MS: "5000",
          APPEXEC_TEST_CLAIM_MARGIN_MS: "500"
        }
        const processes = [yield* spawnInstance(settings, script), yield* spawnInstance(settings, script)]
        for (const p of processes) yield* p.waitForLines("ready", 1, 15_000)
        const started = yield* Effect.gen(function*() {
          const appexec = yield* Appexec.Appexec
          const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
          return yield* Effect.all(
            Array.from({ length: 20 }, (_, i) =>
              appexec.executions.start(principal, appId, { text: `run ${i}` }, { webhook: receiver.url() })),
            { concurrency: "unbounded" }
          )
        }).pipe(Effect.provide(instanceOn(db)))
        yield* waitUntil("20 delivered webhooks", () => {
          const rows = outbox(db)
          return rows.length === 20 && rows.every((r) =>
            r.status === "delivered"
          )
        }, 25_000)
        for (const p of processes) yield* p.kill9

        const keys = (yield* publishedKeys(db)).keys
        for (const { executionId } of started) {
          const arrivals = receiver.of(executionId)
          // Attempt n is the n-th request for the execution; a duplicate would be an extra request
          // arriving without the retry delay in between.
          expect(arrivals.map((a) => a.answer)).toEqual([500, 500, 200])
          expect(arrivals[1]!.at - arrivals[0]!.at).toBeGreaterThanOrEqual(280)
          expect(arrivals[2]!.at - arrivals[1]!.at).toBeGreaterThanOrEqual(280)
          expect(arrivals.every((a) => TestReceiver.verifiedByNodeCrypto(keys, a))).toBe(true)
          expect(rowOf(db, executionId)!.attempts.map((a) => a.statusCode)).toEqual([500, 500, 200])
        }
        // Both processes took part in sending.
        expect(new Set(receiver.received.map(pidOf))).toEqual(new Set(processes.map((p) => p.pid)))
        for (const p of processes) expect(p.stderr()).not.toMatch(/SQLITE_BUSY|database is locked|StorageError/)
      }),
    40_000
  )
})
