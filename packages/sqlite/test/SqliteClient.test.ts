/**
 * The connection: its pragmas, and what happens when another process holds the write lock.
 */
import { Ids } from "@appexec/api"
import { Appexec, AppexecLayer, IdGenerator, KeyStore } from "@appexec/core"
import { SqliteClient, SqliteStorage } from "@appexec/sqlite"
import { TestOutboundHttp } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Context, Effect, Either, Fiber, Layer, Option, TestClock } from "effect"
import { existsSync, statSync, writeFileSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"

const tempFile = Effect.map(
  Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-client-"))),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  ),
  (dir) => join(dir, "appexec.db")
)

describe("SqliteClient", () => {
  it.scoped("opens in WAL mode with foreign keys on", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.provide(SqliteClient.SqliteClient, SqliteClient.layer({ filename }))
      // The journal mode is a property of the file: another connection sees it.
      const raw = new Database(filename)
      expect(raw.pragma("journal_mode", { simple: true })).toBe("wal")
      raw.close()
      // foreign_keys and busy_timeout are per connection: a row violating a reference is refused.
      const refused = yield* Effect.flip(
        Effect.flatMap(KeyStore.KeyStore, (keys) =>
          keys.ensureUser({
            userId: Ids.UserId.make("00000000-0000-4000-8000-000000000002"),
            workspaceId: Ids.WorkspaceId.make("00000000-0000-4000-8000-000000000009"),
            name: "nobody",
            createdAt: 0
          })).pipe(Effect.provide(SqliteStorage.layer({ filename })))
      )
      expect(refused._tag).toBe("StorageError")
      expect(String((refused.cause as Error).message)).toMatch(/FOREIGN KEY/)
    }))

  it.scoped("creates the folders of a new file (the owner's only), and says which file a blocked path could not open", () =>
    Effect.gen(function*() {
      const base = yield* tempFile
      const filename = join(base, "..", "data", "nested", "appexec.db")
      yield* Effect.provide(SqliteClient.SqliteClient, SqliteClient.layer({ filename }))
      expect(existsSync(filename)).toBe(true)
      expect(statSync(join(base, "..", "data", "nested")).mode & 0o777).toBe(0o700)
      // A file where a folder should be: the open fails with its operation and the cause kept.
      writeFileSync(join(base, "..", "blocked"), "")
      const blocked = join(base, "..", "blocked", "appexec.db")
      const failed = yield* Effect.flip(
        Effect.provide(SqliteClient.SqliteClient, SqliteClient.layer({ filename: blocked }))
      )
      expect(failed.operation).toBe(`open ${blocked}`)
      expect(String((failed.cause as Error).message)).toMatch(/ENOTDIR|EEXIST/)
    }))

  it.scoped("checkpoints the write-ahead log at 10,000 pages, not at SQLite's default of 1,000", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const client = Context.get(yield* Layer.build(SqliteClient.layer({ filename })), SqliteClient.SqliteClient)
      // 1,500 commits of one row each: at least one page each, 1,500 or more in the log.
      for (let i = 0; i < 1_500; i++) {
        yield* client.transaction(
          "insert",
          (c) =>
            c.run(
              client.builder.insertInto("workspaces").values({ workspace_id: `w${i}`, name: `w${i}`, created_at: 0 })
            )
        )
      }
      // A checkpoint from another connection reports how many pages the log holds: with the default
      // a commit would have copied them back at 1,000 and the log would have started over.
      const raw = new Database(filename)
      const [result] = raw.pragma("wal_checkpoint(PASSIVE)") as Array<{ log: number }>
      raw.close()
      expect(result!.log).toBeGreaterThan(1_500)
      expect(result!.log).toBeLessThan(10_000)
    }))

  it.scoped("writes arriving together (one group commit): one that throws fails alone, the others commit", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const client = Context.get(yield* Layer.build(SqliteClient.layer({ filename })), SqliteClient.SqliteClient)
      const insert = (value: string) => (c: SqliteClient.Connection) =>
        c.run(client.builder.insertInto("workspaces").values({ workspace_id: value, name: value, created_at: 0 }))
      const [first, duplicate, second] = yield* Effect.all([
        client.batched("a", insert("w1")),
        // The same primary key again in the same group: refused by SQLite.
        client.batched("b", insert("w1")),
        client.batched("c", insert("w2"))
      ], { concurrency: "unbounded", mode: "either" })
      expect(first).toEqual(Either.right(1))
      expect(Either.isLeft(duplicate!) && duplicate.left._tag).toBe("StorageError")
      expect(second).toEqual(Either.right(1))
      const raw = new Database(filename)
      expect(raw.prepare("SELECT workspace_id FROM workspaces ORDER BY workspace_id").pluck().all()).toEqual([
        "w1",
        "w2"
      ])
      raw.close()
    }))

  it.scoped("a grouped write that finds the lock held by another process is retried alone until it is free", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const client = Context.get(
        yield* Layer.build(SqliteClient.layer({ filename, busyTimeoutMs: 5 })),
        SqliteClient.SqliteClient
      )
      const other = new Database(filename)
      yield* Effect.addFinalizer(() => Effect.sync(() => other.close()))
      other.prepare("BEGIN IMMEDIATE").run()
      const write = yield* Effect.fork(
        client.batched(
          "insert",
          (c) => c.run(client.builder.insertInto("workspaces").values({ workspace_id: "w", name: "w", created_at: 0 }))
        )
      )
      // Two turns of the event loop: the group runs, finds the lock busy, and the write is retried
      // on its own with a backoff (virtual time).
      const turn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
      yield* turn
      yield* turn
      expect(Option.isNone(yield* Fiber.poll(write))).toBe(true)
      other.prepare("COMMIT").run()
      yield* TestClock.adjust("10 seconds")
      expect(yield* Fiber.join(write)).toBe(1)
      expect(other.prepare("SELECT workspace_id FROM workspaces").pluck().all()).toEqual(["w"])
    }))

  it.scopedLive("waits out another process's write lock instead of failing with SQLITE_BUSY", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const layer = SqliteStorage.layer({ filename, busyTimeoutMs: 20 })
      const keys = yield* Effect.map(Layer.build(layer), (ctx) => Context.get(ctx, KeyStore.KeyStore))
      // Another connection takes the write lock and keeps it for 300 ms.
      const other = new Database(filename)
      yield* Effect.addFinalizer(() => Effect.sync(() => other.close()))
      other.prepare("BEGIN IMMEDIATE").run()
      const write = yield* Effect.fork(
        keys.ensureWorkspace({
          workspaceId: Ids.WorkspaceId.make("00000000-0000-4000-8000-000000000001"),
          name: "w",
          createdAt: 0
        })
      )
      yield* Effect.sleep("300 millis")
      expect(Option.isNone(yield* Fiber.poll(write))).toBe(true)
      other.prepare("COMMIT").run()
      const written = yield* Fiber.join(write)
      expect(written.name).toBe("w")
    }))

  it.scopedLive("two instances on one file, 50 concurrent starts, two workers: all complete, no storage error", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const instance = (worker: boolean) =>
        AppexecLayer.make({ worker, config: { pollInterval: 20 } }).pipe(
          Layer.provide(SqliteStorage.layer({ filename, busyTimeoutMs: 20 })),
          Layer.provide(IdGenerator.IdGenerator.random),
          Layer.provide(TestOutboundHttp.layer)
        )
      const context = yield* Layer.build(instance(true))
      const otherContext = yield* Layer.build(instance(true))
      const run = <A, E>(effect: Effect.Effect<A, E, Appexec.Appexec>, ctx = context) => Effect.provide(effect, ctx)
      const app = yield* run(
        Effect.flatMap(Appexec.Appexec, (a) =>
          a.apps.import(
            {
              name: "Echo",
              public: true,
              nodes: [
                { id: "t", type: "input.text", label: "T", config: { name: "t", required: true } },
                { id: "o", type: "output.text", label: "O" }
              ],
              edges: [{ source: "t", target: "o" }]
            },
            { owner: { public: true } }
          ))
      )
      const { key } = yield* run(Effect.flatMap(Appexec.Appexec, (a) => a.keys.create({ workspace: "w" })))
      const startOn = (ctx: typeof context, i: number) =>
        run(
          Effect.gen(function*() {
            const appexec = yield* Appexec.Appexec
            const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
            const started = yield* appexec.executions.start(principal, app.appId, { t: `${i}` })
            return yield* appexec.executions.await(started.executionId)
          }),
          ctx
        )
      const done = yield* Effect.all(
        Array.from({ length: 50 }, (_, i) => startOn(i % 2 === 0 ? context : otherContext, i)),
        { concurrency: "unbounded" }
      ).pipe(Effect.timeout("20 seconds"))
      expect(done.map((e) => e.status)).toEqual(Array(50).fill("completed"))
      expect(done.map((e) => e.outputs[0]!.value).sort()).toEqual(Array.from({ length: 50 }, (_, i) => `${i}`).sort())
    }))
})
