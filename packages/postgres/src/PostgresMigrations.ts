/**
 * The versioned, forward-only migrations of the appexec PostgreSQL schema, run with kysely's
 * `Migrator` (a static provider: the migrations ship in the package). Each migration runs in a
 * transaction under kysely's advisory lock and is recorded in `appexec_migrations`, so any number
 * of processes may open the database at once and a database made by an older appexec is upgraded.
 */
import { SqlMigrations } from "@appexec/sql"
import { type Kysely, type Migration, type MigrationResultSet, Migrator, sql } from "kysely"
import * as m0001 from "./internal/migrations/0001_initial.js"
import * as m0002 from "./internal/migrations/0002_retention_and_tracing.js"
import * as m0003 from "./internal/migrations/0003_claim_function.js"
import * as m0004 from "./internal/migrations/0004_claim_says_started.js"
import * as m0005 from "./internal/migrations/0005_execution_reports.js"
import * as m0006 from "./internal/migrations/0006_execution_list_and_redelivery.js"
import * as m0007 from "./internal/migrations/0007_operator_secrets.js"
import * as m0008 from "./internal/migrations/0008_key_and_app_revisions.js"
import * as m0009 from "./internal/migrations/0009_unlogged_rate_limits.js"
import * as m0010 from "./internal/migrations/0010_fewer_execution_indexes.js"
import * as m0011 from "./internal/migrations/0011_key_revision_on_truncate.js"
import * as m0012 from "./internal/migrations/0012_claim_reads_the_index.js"
import * as m0013 from "./internal/migrations/0013_executions_without_foreign_keys.js"
import * as m0014 from "./internal/migrations/0014_key_hints_and_uses.js"
import * as m0015 from "./internal/migrations/0015_media_stores.js"
import * as m0016 from "./internal/migrations/0016_webhook_events.js"
import * as m0017 from "./internal/migrations/0017_processes.js"
import * as m0018 from "./internal/migrations/0018_capacity_and_routing.js"
import * as m0019 from "./internal/migrations/0019_claims_in_place.js"
import * as m0020 from "./internal/migrations/0020_saves_by_index.js"

/** Every migration by name, in order. Names sort in the order they apply; never rename one. */
export const migrations: Readonly<Record<string, Migration>> = {
  "0001_initial": m0001,
  "0002_retention_and_tracing": m0002,
  "0003_claim_function": m0003,
  "0004_claim_says_started": m0004,
  "0005_execution_reports": m0005,
  "0006_execution_list_and_redelivery": m0006,
  "0007_operator_secrets": m0007,
  "0008_key_and_app_revisions": m0008,
  "0009_unlogged_rate_limits": m0009,
  "0010_fewer_execution_indexes": m0010,
  "0011_key_revision_on_truncate": m0011,
  "0012_claim_reads_the_index": m0012,
  "0013_executions_without_foreign_keys": m0013,
  "0014_key_hints_and_uses": m0014,
  "0015_media_stores": m0015,
  "0016_webhook_events": m0016,
  "0017_processes": m0017,
  "0018_capacity_and_routing": m0018,
  "0019_claims_in_place": m0019,
  "0020_saves_by_index": m0020
}

/** Name of the newest migration. */
export const latest = "0020_saves_by_index"

/** The table that records applied migrations. */
export const migrationTable = "appexec_migrations"

/** A kysely `Migrator` over appexec's migrations in `schema`. */
export const migrator = (db: Kysely<unknown>, schema: string): Migrator =>
  new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: migrationTable,
    migrationLockTableName: `${migrationTable}_lock`,
    migrationTableSchema: schema
  })

/** Applies the migrations up to `target` (default: all of them); an error is returned in the result set. */
export const migrateTo = (db: Kysely<unknown>, schema: string, target: string = latest): Promise<MigrationResultSet> =>
  target === latest ? migrator(db, schema).migrateToLatest() : migrator(db, schema).migrateTo(target)

/**
 * Brings the schema of `db` to `latest` (creating the schema first when something is to be applied), or, when `migrate` is false, checks that it is there; the
 * migrations it applied. Refuses a database that a newer appexec migrated (`SqlMigrations.upgrade`).
 */
export const upgrade = (db: Kysely<unknown>, schema: string, migrate: boolean) =>
  SqlMigrations.upgrade(
    db,
    migrator(db, schema),
    { known: Object.keys(migrations), table: migrationTable, schema },
    migrate,
    // The schema first: the migration table lives in it, and migrations run in it.
    () => sql.raw(`CREATE SCHEMA IF NOT EXISTS ${schema}`).execute(db)
  )
