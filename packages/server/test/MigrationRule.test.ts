/**
 * The rule of docs/upgrading.md, held structurally on both databases: every migration since the
 * previous release is additive, so that the previous release's processes run on the newer
 * schema. The schema at the previous release's last migration is noted (every table's columns with
 * their type, nullability and default; on PostgreSQL every function with its arguments and
 * result), every later migration is applied, and nothing noted may be gone or changed, nor may a
 * column be added that an insert of the previous release (which does not name it) cannot fill. A
 * change that breaks the rule (a dropped column, a NOT NULL column without a default) is caught.
 */
import { PostgresMigrations } from "@appexec/postgres"
import { SqliteMigrations } from "@appexec/sqlite"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { Kysely, PostgresDialect, sql, SqliteDialect } from "kysely"
import { join } from "node:path"
import pg from "pg"
import * as TestDatabase from "../../postgres/test/support/TestDatabase.js"
import { tempDataDir } from "./support/ServeProcess.js"

/**
 * The newest migration of the previous release, per database: the schema its processes read and
 * write. Moved to the newest migration at each release.
 */
const PREVIOUS_RELEASE = { sqlite: "0012_key_hints_and_uses", postgres: "0014_key_hints_and_uses" } as const

/** What the previous release relies on in a schema. */
interface Shape {
  readonly columns: Readonly<
    Record<string, { readonly type: string; readonly nullable: boolean; readonly defaulted: boolean }>
  >
  readonly functions: Readonly<Record<string, string>>
}

/** What in `after` breaks a process that knew `before`, in words; none when the change is additive. */
const breaks = (before: Shape, after: Shape): ReadonlyArray<string> => {
  const found: Array<string> = []
  const tables = new Set(Object.keys(before.columns).map((c) => c.split(".")[0]))
  for (const [name, column] of Object.entries(before.columns)) {
    const now = after.columns[name]
    if (now === undefined) found.push(`${name} was dropped or renamed`)
    else if (now.type !== column.type) found.push(`${name} changed type from ${column.type} to ${now.type}`)
    else if (column.nullable && !now.nullable) found.push(`${name} became NOT NULL`)
  }
  for (const [name, column] of Object.entries(after.columns)) {
    if (before.columns[name] === undefined && tables.has(name.split(".")[0]) && !column.nullable && !column.defaulted) {
      found.push(`${name} is new, NOT NULL and without a default: an insert of the previous release cannot fill it`)
    }
  }
  for (const [name, result] of Object.entries(before.functions)) {
    if (after.functions[name] === undefined) found.push(`function ${name} was dropped or its arguments changed`)
    else if (after.functions[name] !== result) found.push(`function ${name} now returns ${after.functions[name]}`)
  }
  return found
}

const sqliteShape = (filename: string): Shape => {
  const db = new Database(filename, { readonly: true })
  try {
    const tables = db.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'appexec_migrations%'"
    ).pluck().all() as Array<string>
    const columns: Record<string, Shape["columns"][string]> = {}
    for (const table of tables) {
      const info = db.prepare(`PRAGMA table_info("${table}")`).all() as Array<
        { name: string; type: string; notnull: number; dflt_value: unknown; pk: number }
      >
      for (const c of info) {
        columns[`${table}.${c.name}`] = {
          type: c.type.toLowerCase(),
          nullable: c.notnull === 0 && c.pk === 0,
          // An INTEGER PRIMARY KEY is the rowid: filled when not named.
          defaulted: c.dflt_value !== null || (c.pk === 1 && c.type.toUpperCase() === "INTEGER")
        }
      }
    }
    return { columns, functions: {} }
  } finally {
    db.close()
  }
}

const sqliteAt = (filename: string, target: string) =>
  Effect.promise(async () => {
    const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(filename) }) })
    const result = await SqliteMigrations.migrateTo(db, target)
    await db.destroy()
    if (result.error !== undefined) throw result.error
  })

const postgresShape = async (db: Kysely<unknown>): Promise<Shape> => {
  const columns = await sql<
    { table_name: string; column_name: string; data_type: string; is_nullable: string; column_default: string | null }
  >`
    SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
    WHERE table_schema = 'public' AND table_name NOT LIKE 'appexec_migrations%'`.execute(db)
  const functions = await sql<{ name: string; result: string }>`
    SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' AS name, pg_get_function_result(p.oid) AS result
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'`.execute(db)
  return {
    columns: Object.fromEntries(columns.rows.map((c) => [`${c.table_name}.${c.column_name}`, {
      type: c.data_type,
      nullable: c.is_nullable === "YES",
      defaulted: c.column_default !== null
    }])),
    functions: Object.fromEntries(functions.rows.map((f) => [f.name, f.result]))
  }
}

describe("every migration since the previous release is additive", () => {
  it.scoped("SQLite: no table or column the previous release uses is dropped or changed", () =>
    Effect.gen(function*() {
      const filename = join(yield* tempDataDir, "appexec.db")
      yield* sqliteAt(filename, PREVIOUS_RELEASE.sqlite)
      const before = sqliteShape(filename)
      expect(Object.keys(before.columns)).toContain("executions.status")
      yield* sqliteAt(filename, SqliteMigrations.latest)
      expect(breaks(before, sqliteShape(filename))).toEqual([])
    }))

  it.scoped(
    "PostgreSQL: no table, column or function the previous release uses is dropped or changed",
    () =>
      Effect.gen(function*() {
        const url = yield* Effect.promise(() => TestDatabase.create("rule"))
        const db = yield* Effect.acquireRelease(
          Effect.sync(() =>
            new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url }) }) })
          ),
          (db) => Effect.promise(() => db.destroy())
        )
        const migrate = (target: string) =>
          Effect.promise(async () => {
            const result = await PostgresMigrations.migrateTo(db, "public", target)
            if (result.error !== undefined) throw result.error
          })
        yield* migrate(PREVIOUS_RELEASE.postgres)
        const before = yield* Effect.promise(() => postgresShape(db))
        expect(Object.keys(before.functions).some((f) => f.startsWith("appexec_claim_executions("))).toBe(true)
        yield* migrate(PostgresMigrations.latest)
        expect(breaks(before, yield* Effect.promise(() => postgresShape(db)))).toEqual([])
      }),
    60_000
  )

  it.scoped("a dropped column and a new NOT NULL column without a default are caught", () =>
    Effect.gen(function*() {
      const filename = join(yield* tempDataDir, "appexec.db")
      yield* sqliteAt(filename, PREVIOUS_RELEASE.sqlite)
      const before = sqliteShape(filename)
      const db = new Database(filename)
      db.exec("ALTER TABLE executions DROP COLUMN trace_parent")
      db.exec("ALTER TABLE workspaces ADD COLUMN region TEXT NOT NULL DEFAULT ''")
      db.exec("ALTER TABLE apps ADD COLUMN owner_note TEXT")
      db.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
      db.close()
      expect(breaks(before, sqliteShape(filename))).toEqual(["executions.trace_parent was dropped or renamed"])
      // SQLite refuses ADD COLUMN … NOT NULL without a default (a migration would rebuild the table).
      const withTeam = {
        ...before,
        columns: { ...before.columns, "users.team": { type: "text", nullable: false, defaulted: false } }
      }
      expect(breaks(before, withTeam)).toEqual([
        "users.team is new, NOT NULL and without a default: an insert of the previous release cannot fill it"
      ])
    }))
})
