/**
 * `SqliteClient.exclusive`, the storage's lock on SQLite: the write lock held across the turns of
 * the event loop as one transaction. Other processes (connections) wait for it and do not see its
 * writes before the end; the process's own fibers write on, in that transaction; what was written
 * commits at the end, also when the work failed; inside one, another runs at once.
 */
import { SqliteClient } from "@appexec/sqlite"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Context, Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"

const tempFile = Effect.map(
  Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-exclusive-"))),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  ),
  (dir) => join(dir, "appexec.db")
)

const opened = (filename: string) =>
  Effect.map(Layer.build(SqliteClient.layer({ filename })), (ctx) => Context.get(ctx, SqliteClient.SqliteClient))

const insert = (client: SqliteClient.SqliteClient["Type"], name: string) =>
  client.batched(
    "insert",
    (c) => c.run(client.builder.insertInto("workspaces").values({ workspace_id: name, name, created_at: 0 }))
  )

const turn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

describe("SqliteClient.exclusive", () => {
  it.scoped("holds the write lock until it ends: another connection can neither write nor see its writes before", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const client = yield* opened(filename)
      const other = new Database(filename, { timeout: 0 })
      yield* Effect.addFinalizer(() => Effect.sync(() => other.close()))
      const names = () => other.prepare("SELECT workspace_id FROM workspaces ORDER BY workspace_id").pluck().all()
      yield* client.exclusive(Effect.gen(function*() {
        yield* insert(client, "w1")
        yield* turn
        yield* insert(client, "w2")
        expect(() => other.prepare("BEGIN IMMEDIATE").run()).toThrow(/locked|busy/i)
        expect(names()).toEqual([])
      }))
      expect(names()).toEqual(["w1", "w2"])
      other.prepare("BEGIN IMMEDIATE").run()
      other.prepare("ROLLBACK").run()
    }))

  it.scoped("a failure ends the hold too: what was written commits, and the client writes on afterwards", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const client = yield* opened(filename)
      const exit = yield* Effect.exit(client.exclusive(Effect.zipRight(insert(client, "written"), Effect.fail("no"))))
      expect(exit).toEqual(Exit.fail("no"))
      yield* insert(client, "after")
      const rows = yield* client.execute(
        "read",
        (c) => c.all(client.builder.selectFrom("workspaces").select("name").orderBy("name"))
      )
      expect(rows.map((r) => r.name)).toEqual(["after", "written"])
    }))

  it.scoped("the process's other fibers write on in the hold's transaction; an exclusive inside it runs at once", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const client = yield* opened(filename)
      const other = new Database(filename, { timeout: 0 })
      yield* Effect.addFinalizer(() => Effect.sync(() => other.close()))
      const go = yield* Deferred.make<void>()
      // Forked before the lock is taken: not one of the holder's fibers.
      const outsider = yield* Effect.fork(Effect.zipRight(Deferred.await(go), insert(client, "outsider")))
      yield* client.exclusive(Effect.gen(function*() {
        yield* Deferred.succeed(go, undefined)
        expect(yield* Fiber.join(outsider)).toBe(1)
        expect(yield* client.exclusive(insert(client, "nested"))).toBe(1)
        // Not committed yet: another connection sees none of it.
        expect(other.prepare("SELECT count(*) FROM workspaces").pluck().get()).toBe(0)
      }))
      expect(other.prepare("SELECT name FROM workspaces ORDER BY name").pluck().all()).toEqual(["nested", "outsider"])
    }))
})
