/**
 * Where the `appexec` command keeps its state: SQLite under `--data` (the default), or the
 * PostgreSQL database of `--database postgres://…` (`APPEXEC_DATABASE_URL`), which many API and
 * worker processes on many machines share (docs/scaling.md). Every command takes these options.
 */
import type { PostgresStorage } from "@appexec/postgres"
import { PostgresClient } from "@appexec/postgres"
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { Config, Effect, Option } from "effect"
import { readFileSync } from "node:fs"
import * as Flags from "./internal/Flags.js"

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

const url = Options.text("database").pipe(
  Options.withPseudoName("URL"),
  Options.withDescription(
    "PostgreSQL URL (postgres://user:password@host:port/db?sslmode=…) shared by many processes; absent: SQLite under --data"
  ),
  Options.withFallbackConfig(Config.string("APPEXEC_DATABASE_URL")),
  Options.optional,
  Options.mapEffect((value): Effect.Effect<Option.Option<string>, ValidationError.ValidationError> =>
    Option.isNone(value) || value.value === ""
      ? Effect.succeedNone
      : PostgresClient.isPostgresUrl(value.value)
      ? Effect.succeed(value)
      : Flags.refuse(
        "database",
        `'${value.value.replace(/\/\/[^@/]*@/, "//…@")}' is not a postgres:// or postgresql:// URL`
      )
  )
)

/** Connections a process opens to PostgreSQL when `--database-pool-size` is not given. */
export const defaultPoolSize = 10

const poolSize = Flags.count({
  name: "database-pool-size",
  variable: "APPEXEC_DATABASE_POOL_SIZE",
  description: "Connections this process opens to PostgreSQL (plus one that listens for work)"
}, defaultPoolSize)

const statementTimeout = Flags.optionalDuration({
  name: "database-statement-timeout",
  variable: "APPEXEC_DATABASE_STATEMENT_TIMEOUT",
  description: "Longest a PostgreSQL statement may run, e.g. 30s (default: no limit)"
})

const ca = Options.file("database-ca", { exists: "yes" }).pipe(
  Options.withPseudoName("FILE"),
  Options.withDescription(
    "PEM file of the certificate authority of the PostgreSQL server: TLS, verifying the server against it"
  ),
  Options.withFallbackConfig(Config.string("APPEXEC_DATABASE_CA")),
  Options.optional
)

const noMigrate = Options.boolean("no-migrate").pipe(
  Options.withDescription(
    "Do not apply pending migrations on start (`appexec migrate` does, alone): a database behind this appexec is refused"
  ),
  // APPEXEC_MIGRATE=false is the same.
  Options.withFallbackConfig(Config.map(Config.boolean("APPEXEC_MIGRATE"), (migrate) => !migrate))
)

/** `--database` and its settings, and `--no-migrate`, for every command. */
export const options: Options.Options<Database> = Options.all({ url, poolSize, statementTimeout, ca, noMigrate }).pipe(
  Options.mapEffect(({ ca, noMigrate, poolSize, statementTimeout, url }) =>
    Effect.try({
      try: (): Database => ({
        postgres: Option.map(url, (connectionString) => ({
          connectionString,
          poolSize,
          migrate: !noMigrate,
          ...(Option.isSome(statementTimeout) ? { statementTimeout: statementTimeout.value } : {}),
          ...(Option.isSome(ca) ? { ssl: { ca: readFileSync(ca.value, "utf8") } } : {})
        })),
        migrate: !noMigrate
      }),
      catch: (cause) => ValidationError.invalidValue(HelpDoc.p(`--database-ca: cannot be read (${String(cause)})`))
    })
  )
)

/** How the database is named for the operator: its URL without the password, or the SQLite file. */
export const describe = (database: Database, sqliteFile: string) =>
  Option.match(database.postgres, {
    onNone: () => sqliteFile,
    onSome: (pg) => pg.connectionString.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:…@")
  })
