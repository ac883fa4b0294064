/**
 * Migrations: a new file gets every migration, recorded; a file made at an older migration is
 * upgraded on open and keeps its data.
 */
import { KeyStore } from "@appexec/core"
import { SqliteMigrations, SqliteStorage } from "@appexec/sqlite"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, Option } from "effect"
import { Kysely, SqliteDialect } from "kysely"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"

const tempFile = Effect.map(
  Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-migrations-"))),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  ),
  (dir) => join(dir, "appexec.db")
)

const inspect = (filename: string) => {
  const db = new Database(filename, { readonly: true })
  try {
    const applied = db.prepare(`SELECT name FROM ${SqliteMigrations.migrationTable} ORDER BY name`).all() as Array<
      { name: string }
    >
    const indexes = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'")
      .all() as Array<{
        name: string
      }>
    return { applied: applied.map((r) => r.name), indexes: indexes.map((r) => r.name) }
  } finally {
    db.close()
  }
}

describe("SqliteMigrations", () => {
  it.scoped("a new database gets every migration, recorded in appexec_migrations", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.scoped(
        Effect.asVoid(SqliteStorage.layer({ filename }).pipe((layer) => Effect.provide(Effect.void, layer)))
      )
      const { applied, indexes } = inspect(filename)
      expect(applied).toEqual(Object.keys(SqliteMigrations.migrations))
      expect(applied.at(-1)).toBe(SqliteMigrations.latest)
      expect(indexes).toContain("executions_open_by_workspace")
      expect(indexes).not.toContain("executions_open")
    }))

  it.scoped("queue positions and unfiltered pages are read along executions_workspace_status (0011)", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.scoped(Effect.provide(Effect.void, SqliteStorage.layer({ filename })))
      expect(inspect(filename).indexes).not.toContain("executions_queued")
      expect(inspect(filename).indexes).not.toContain("executions_workspace")
      const db = new Database(filename, { readonly: true })
      try {
        // `SqlExecutionStore`'s page without a filter, as kysely writes it: each status's newest, merged.
        const branch = (status: string) =>
          `select * from (select "seq", "execution_id" from "executions" where "workspace_id" = ? and "status" = '${status}' and "seq" < ? order by "seq" desc limit ?) as "branch"`
        const page = db.prepare(
          `EXPLAIN QUERY PLAN select * from (${
            ["queued", "running", "completed", "failed"].map(branch).join(" union all ")
          }) as "newest" order by "seq" desc limit ?`
        ).all("w", 100, 21, "w", 100, 21, "w", 100, 21, "w", 100, 21, 21) as Array<{ detail: string }>
        const searches = page.map((row) => row.detail).filter((detail) => detail.startsWith("SEARCH executions"))
        expect(searches).toEqual(
          Array.from(
            { length: 4 },
            () => "SEARCH executions USING INDEX executions_workspace_status (workspace_id=? AND status=? AND seq<?)"
          )
        )
        // Each branch is a co-routine of its own, so its LIMIT stops its read of the index (what is
        // sorted for the merge is at most a page per status).
        expect(page.filter((row) => row.detail === "CO-ROUTINE branch")).toHaveLength(4)
        // The statement of `SqlExecutionStore`'s queue position, as kysely writes it.
        const plan = db.prepare(
          `EXPLAIN QUERY PLAN SELECT count(*) AS n FROM executions AS mine
           INNER JOIN executions AS ahead ON ahead.workspace_id = mine.workspace_id AND ahead.seq < mine.seq
           WHERE mine.execution_id = ? AND mine.status = 'queued' AND ahead.status = 'queued'`
        ).all("00000000-0000-7000-8000-000000000001") as Array<{ detail: string }>
        const details = plan.map((row) => row.detail)
        expect(details).toContainEqual(
          expect.stringMatching(
            /^SEARCH ahead USING COVERING INDEX executions_workspace_status \(workspace_id=\? AND status=\? AND seq<\?\)$/
          )
        )
      } finally {
        db.close()
      }
    }))

  it.scoped("a worker's look for cancels reads the executions with a request alone (0017)", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.scoped(Effect.provide(Effect.void, SqliteStorage.layer({ filename })))
      expect(inspect(filename).indexes).toContain("executions_cancel_requested")
      const db = new Database(filename, { readonly: true })
      try {
        // `SqlExecutionQueue.cancelRequested`'s statement, as kysely writes it.
        const plan = db.prepare(
          `EXPLAIN QUERY PLAN select "execution_id" from "executions" where "status" in ('queued', 'running')
           and "lease_worker" = ? and "lease_expires_at" > ? and "cancel_requested_at" is not null`
        ).all("worker", 0) as Array<{ detail: string }>
        expect(plan.map((row) => row.detail)).toEqual(["SCAN executions USING INDEX executions_cancel_requested"])
      } finally {
        db.close()
      }
    }))

  it.scoped("a database made at 0001 is upgraded on open and keeps its rows", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      // An appexec of migration 0001 made this file and wrote a workspace.
      yield* Effect.promise(async () => {
        const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(filename) }) })
        const result = await SqliteMigrations.migrateTo(db, "0001_initial")
        if (result.error !== undefined) throw result.error
        await db.destroy()
        const raw = new Database(filename)
        raw.prepare("INSERT INTO workspaces (workspace_id, name, created_at) VALUES (?, ?, ?)").run(
          "00000000-0000-4000-8000-000000000001",
          "old",
          1
        )
        raw.close()
      })
      expect(inspect(filename)).toEqual({
        applied: ["0001_initial"],
        indexes: expect.not.arrayContaining(["executions_open_by_workspace"])
      })
      const found = yield* Effect.flatMap(KeyStore.KeyStore, (keys) => keys.findWorkspace("old")).pipe(
        Effect.provide(SqliteStorage.layer({ filename }))
      )
      expect(Option.map(found, (w) => w.workspaceId)).toEqual(Option.some("00000000-0000-4000-8000-000000000001"))
      const { applied, indexes } = inspect(filename)
      expect(applied).toEqual(Object.keys(SqliteMigrations.migrations))
      expect(indexes).toEqual(expect.arrayContaining(["executions_open_by_workspace", "webhook_outbox_due"]))
    }))

  it.scoped("the key revision moves with every change of api_keys that bears on a key's validity, in the same transaction, whoever makes it", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.scoped(Effect.provide(Effect.void, SqliteStorage.layer({ filename })))
      // Another program on the file, with nothing of appexec: the triggers do the counting.
      const raw = new Database(filename)
      const revision = () => (raw.prepare("SELECT revision FROM key_revision").get() as { revision: number }).revision
      try {
        raw.prepare("INSERT INTO workspaces (workspace_id, name, created_at) VALUES (?, 'w', 1)").run(
          "00000000-0000-4000-8000-000000000001"
        )
        raw.prepare("INSERT INTO users (user_id, workspace_id, name, created_at) VALUES (?, ?, 'u', 1)").run(
          "00000000-0000-4000-8000-000000000002",
          "00000000-0000-4000-8000-000000000001"
        )
        const before = revision()
        raw.prepare(
          "INSERT INTO api_keys (api_key_id, workspace_id, user_id, hash, hint, created_at) VALUES (?, ?, ?, 'h', 'aex_x', 1)"
        ).run(
          "00000000-0000-4000-8000-000000000003",
          "00000000-0000-4000-8000-000000000001",
          "00000000-0000-4000-8000-000000000002"
        )
        expect(revision()).toBe(before)
        // A recorded use changes no key's validity (0012): the revision stays.
        raw.prepare("UPDATE api_keys SET last_used_at = 4, hint_tail = 'abcd'").run()
        expect(revision()).toBe(before)
        raw.prepare("UPDATE api_keys SET revoked_at = 5").run()
        expect(revision()).toBe(before + 1)
        raw.prepare("DELETE FROM api_keys").run()
        expect(revision()).toBe(before + 2)
      } finally {
        raw.close()
      }
    }))
})
