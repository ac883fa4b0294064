/**
 * Where the `appexec` command keeps its state: SQLite under `--data` (the default), or the
 * PostgreSQL database of `--database postgres://…` (`APPEXEC_DATABASE_URL`), which many API and
 * worker processes on many machines share (docs/scaling.md). Every command takes these options.
 */
import type { PostgresStorage } from "@appexec/postgres"
import { PostgresClient } from "@appexec/postgres"
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { Config, Duration, Effect, Option } from "effect"
import { readFileSync } from "node:fs"

/** The database of a command: none (SQLite under `--data`) or PostgreSQL. */
export type Database = Option.Option<PostgresStorage.Options>

const invalid = (text: string) => Effect.fail(ValidationError.invalidValue(HelpDoc.p(text)))

const url = Options.text("database").pipe(
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
      : invalid(`--database: '${value.value.replace(/\/\/[^@/]*@/, "//…@")}' is not a postgres:// or postgresql:// URL`)
  )
)

const poolSize = Options.integer("database-pool-size").pipe(
  Options.withDescription("Connections this process opens to PostgreSQL (plus one that listens for work)"),
  Options.withFallbackConfig(Config.integer("APPEXEC_DATABASE_POOL_SIZE")),
  Options.withDefault(10),
  Options.mapEffect((
    n
  ) => (n >= 1 ? Effect.succeed(n) : invalid(`--database-pool-size: ${n} is not a positive number`)))
)

const units: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000 }

const statementTimeout = Options.text("database-statement-timeout").pipe(
  Options.withDescription("Longest a PostgreSQL statement may run, e.g. 30s (default: no limit)"),
  Options.withFallbackConfig(Config.string("APPEXEC_DATABASE_STATEMENT_TIMEOUT")),
  Options.optional,
  Options.mapEffect((text) => {
    if (Option.isNone(text)) return Effect.succeedNone
    const match = /^(\d+)(ms|s|m)$/.exec(text.value.trim())
    const unit = match === null ? undefined : units[match[2]!]
    return match === null || unit === undefined || Number(match[1]) === 0
      ? invalid(`--database-statement-timeout: '${text.value}' is not a duration like 30s or 500ms`)
      : Effect.succeed(Option.some(Duration.millis(Number(match[1]) * unit)))
  })
)

const ca = Options.file("database-ca", { exists: "yes" }).pipe(
  Options.withDescription(
    "PEM file of the certificate authority of the PostgreSQL server: TLS, verifying the server against it"
  ),
  Options.withFallbackConfig(Config.string("APPEXEC_DATABASE_CA")),
  Options.optional
)

/** `--database` and its settings, for every command. */
export const options: Options.Options<Database> = Options.all({ url, poolSize, statementTimeout, ca }).pipe(
  Options.mapEffect(({ url, poolSize, statementTimeout, ca }) =>
    Effect.try({
      try: (): Database =>
        Option.map(url, (connectionString) => ({
          connectionString,
          poolSize,
          ...(Option.isSome(statementTimeout) ? { statementTimeout: statementTimeout.value } : {}),
          ...(Option.isSome(ca) ? { ssl: { ca: readFileSync(ca.value, "utf8") } } : {})
        })),
      catch: (cause) => ValidationError.invalidValue(HelpDoc.p(`--database-ca: cannot be read (${String(cause)})`))
    })
  )
)

/** How the database is named for the operator: its URL without the password, or the SQLite file. */
export const describe = (database: Database, sqliteFile: string) =>
  Option.match(database, {
    onNone: () => sqliteFile,
    onSome: (pg) => pg.connectionString.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:…@")
  })
