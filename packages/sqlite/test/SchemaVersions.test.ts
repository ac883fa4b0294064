/**
 * What a start does with a database that is not at this appexec's migration: one that a newer
 * appexec migrated is refused, changing nothing (no table made, no row written), with the sentence
 * an operator understands; one that lacks migrations is brought up to date, or refused with
 * `appexec migrate` named when opened with `migrate: false`; `migrated` says what an open applied.
 */
import { SqliteClient, SqliteMigrations, SqliteStorage } from "@appexec/sqlite"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Cause, Context, Effect, Exit, Layer } from "effect"
import { Kysely, SqliteDialect } from "kysely"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"

const tempFile = Effect.map(
  Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-versions-"))),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  ),
  (dir) => join(dir, "appexec.db")
)

/** Every table with its rows, in order: what a refused open must leave as it was. */
const contents = (filename: string) => {
  const db = new Database(filename, { readonly: true })
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck()
      .all() as Array<
        string
      >
    return Object.fromEntries(tables.map((t) => [t, db.prepare(`SELECT * FROM "${t}"`).all()]))
  } finally {
    db.close()
  }
}

/** A file at `target` (every migration by default), made as an appexec of that migration would. */
const databaseAt = (filename: string, target?: string) =>
  Effect.promise(async () => {
    const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(filename) }) })
    const result = await SqliteMigrations.migrateTo(db, target)
    if (result.error !== undefined) throw result.error
    await db.destroy()
  })

/** The message of the failure of opening `filename` with `options`. */
const openFailure = (filename: string, options: Partial<SqliteClient.Options> = {}) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Effect.scoped(Layer.build(SqliteStorage.layer({ filename, ...options }))))
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : undefined
    const cause = error?._tag === "Some" ? error.value.cause : undefined
    return cause instanceof Error ? cause.message : String(cause)
  })

const migratedBy = (filename: string, options: Partial<SqliteClient.Options> = {}) =>
  Effect.scoped(
    Effect.map(Layer.build(SqliteClient.layer({ filename, ...options })), (ctx) =>
      Context.get(ctx, SqliteClient.SqliteClient).migrated)
  )

describe("a database at another migration than this appexec's", () => {
  it.scoped("a newer appexec's database is refused, naming its migration, and nothing is changed", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* databaseAt(filename)
      const raw = new Database(filename)
      raw.prepare(`INSERT INTO ${SqliteMigrations.migrationTable} (name, timestamp) VALUES (?, ?)`).run(
        "9999_from_a_newer_appexec",
        new Date().toISOString()
      )
      raw.close()
      const before = contents(filename)
      for (const migrate of [true, false]) {
        expect(yield* openFailure(filename, { migrate })).toBe(
          "this database was migrated by a newer appexec (migration 9999_from_a_newer_appexec); upgrade this process"
        )
      }
      expect(contents(filename)).toEqual(before)
    }))

  it.scoped("told not to migrate, a database behind this appexec is refused with `appexec migrate` and left as it is", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* databaseAt(filename, "0005_fair_claims")
      const before = contents(filename)
      expect(yield* openFailure(filename, { migrate: false })).toBe(
        `the database is at migration 0005_fair_claims and this appexec needs ${SqliteMigrations.latest}: ` +
          "run `appexec migrate` (or start without --no-migrate)"
      )
      expect(contents(filename)).toEqual(before)
      // A new file alike: no table is made.
      const empty = join(filename, "..", "empty.db")
      expect(yield* openFailure(empty, { migrate: false })).toMatch(/^the database has no appexec tables yet and /)
      expect(contents(empty)).toEqual({})
    }))

  it.scoped("an open applies what the database lacks and says so; an up-to-date database opens as it is either way", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* databaseAt(filename, "0010_operator_secrets")
      const names = Object.keys(SqliteMigrations.migrations)
      expect(yield* migratedBy(filename)).toEqual(names.slice(names.indexOf("0010_operator_secrets") + 1))
      expect(yield* migratedBy(filename)).toEqual([])
      expect(yield* migratedBy(filename, { migrate: false })).toEqual([])
    }))
})
