/**
 * `appexec migrate` (docs/upgrading.md): applies the migrations the database lacks, alone, and
 * exits. It opens only the database: no master key, no signing key, no bootstrap, so it may run
 * as a role that may create tables while every other process runs as one with data rights only,
 * with `--no-migrate` (`APPEXEC_MIGRATE=false`). It refuses, changing nothing, a database that a
 * newer appexec migrated.
 */
import { PostgresClient, PostgresMigrations } from "@appexec/postgres"
import { SqliteClient, SqliteMigrations } from "@appexec/sqlite"
import { Command } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import * as Database from "../Database.js"
import * as Instance from "../Instance.js"
import * as StoreSettings from "../settings/StoreSettings.js"
import { store } from "./AdminCommands.js"

/** The migrations applied now, and the newest one this appexec knows. */
const migrateDatabase = (dataDir: string, database: Database.Database) =>
  Option.match(database.postgres, {
    onNone: () =>
      Effect.sync(() => Instance.prepareDataDir(dataDir)).pipe(
        Effect.zipRight(Effect.map(SqliteClient.SqliteClient, (client) => client.migrated)),
        Effect.provide(SqliteClient.layer({ filename: Instance.databaseFile(dataDir), migrate: true })),
        Effect.map((applied) => ({ applied, latest: SqliteMigrations.latest }))
      ),
    onSome: (postgres) =>
      Effect.map(PostgresClient.PostgresClient, (client) => client.migrated).pipe(
        Effect.provide(PostgresClient.layer({ ...postgres, migrate: true })),
        Effect.map((applied) => ({ applied, latest: PostgresMigrations.latest }))
      )
  })

/** `appexec migrate`: prints each migration it applied, then where the database stands. */
export const migrateCommand = Command.make(
  "migrate",
  { store },
  ({ store }) =>
    Effect.gen(function*() {
      const database = yield* Database.fromSettings(store)
      const { applied, latest } = yield* migrateDatabase(store.get(StoreSettings.data), database)
      for (const name of applied) yield* Console.log(`applied ${name}`)
      yield* Console.log(
        applied.length === 0
          ? `the database is up to date (migration ${latest})`
          : `the database is at migration ${latest}`
      )
    }).pipe(Effect.scoped)
).pipe(
  Command.withDescription(
    "Apply the migrations the database lacks, alone, and exit (then start the other processes with --no-migrate)"
  )
)
