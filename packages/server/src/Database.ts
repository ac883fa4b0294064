/**
 * Where the `appexec` command keeps its state: SQLite under `--data` (the default), or the
 * PostgreSQL database of `--database postgres://…` (`APPEXEC_DATABASE_URL`), which many API and
 * worker processes on many machines share (docs/scaling.md). Every command takes these settings
 * (`StoreSettings`).
 */
import { Errors } from "@appexec/core"
import type { PostgresStorage } from "@appexec/postgres"
import { Effect, Option } from "effect"
import { readFileSync } from "node:fs"
import type * as Resolve from "./settings/Resolve.js"
import * as StoreSettings from "./settings/StoreSettings.js"
import { hidePassword } from "./settings/Values.js"

/**
 * The database of a command: PostgreSQL, or none (SQLite under `--data`); and whether opening it
 * applies pending migrations (`--no-migrate`: not, and a database behind this appexec refuses).
 */
export interface Database {
  readonly postgres: Option.Option<PostgresStorage.Options>
  readonly migrate: boolean
}

/** SQLite under `--data`, migrated on open: the database of a command given no flag. */
export const sqlite: Database = { postgres: Option.none(), migrate: true }

/** Whether the database is PostgreSQL. */
export const isPostgres = (database: Database): boolean => Option.isSome(database.postgres)

/**
 * The database of a command's settings (`--database` and its connection settings, and whether to
 * migrate: `--no-migrate`); the CA file of `--database-ca` is read now.
 */
export const fromSettings = (settings: Resolve.Resolved): Effect.Effect<Database, Errors.InvalidConfiguration> => {
  const migrate = !settings.get(StoreSettings.noMigrate)
  const url = settings.get(StoreSettings.database)
  if (url === undefined) return Effect.succeed({ postgres: Option.none(), migrate })
  const statementTimeout = settings.get(StoreSettings.databaseStatementTimeout)
  const ca = settings.get(StoreSettings.databaseCa)
  return Effect.try({
    try: (): Database => ({
      postgres: Option.some({
        connectionString: url,
        poolSize: settings.get(StoreSettings.databasePoolSize),
        migrate,
        ...(statementTimeout === undefined ? {} : { statementTimeout }),
        ...(ca === undefined ? {} : { ssl: { ca: readFileSync(ca, "utf8") } })
      }),
      migrate
    }),
    catch: (cause) =>
      new Errors.InvalidConfiguration({ setting: "--database-ca", reason: `cannot be read (${String(cause)})` })
  })
}

/** How the database is named for the operator: its URL without the password, or the SQLite file. */
export const describe = (database: Database, sqliteFile: string) =>
  Option.match(database.postgres, {
    onNone: () => sqliteFile,
    onSome: (pg) => hidePassword(pg.connectionString)
  })
