/**
 * The versioned, forward-only migrations of the appexec SQLite schema, run with kysely's
 * `Migrator`. Each migration runs in its own `BEGIN IMMEDIATE` transaction and is recorded in
 * the table `appexec_migrations`, so opening a database made by an older appexec upgrades it.
 */
import { SqlMigrations } from "@appexec/sql"
import { type Kysely, type Migration, type MigrationResultSet, Migrator } from "kysely"
import * as m0001 from "./internal/migrations/0001_initial.js"
import * as m0002 from "./internal/migrations/0002_queue_indexes.js"
import * as m0003 from "./internal/migrations/0003_signing_key_grace.js"
import * as m0004 from "./internal/migrations/0004_cancel_and_idempotency.js"
import * as m0005 from "./internal/migrations/0005_fair_claims.js"
import * as m0006 from "./internal/migrations/0006_sliding_rate_limit_and_key_revision.js"
import * as m0007 from "./internal/migrations/0007_retention_and_tracing.js"
import * as m0008 from "./internal/migrations/0008_execution_reports.js"
import * as m0009 from "./internal/migrations/0009_execution_list_and_redelivery.js"
import * as m0010 from "./internal/migrations/0010_operator_secrets.js"
import * as m0011 from "./internal/migrations/0011_fewer_execution_indexes.js"
import * as m0012 from "./internal/migrations/0012_key_hints_and_uses.js"
import * as m0013 from "./internal/migrations/0013_media_stores.js"
import * as m0014 from "./internal/migrations/0014_webhook_events.js"
import * as m0015 from "./internal/migrations/0015_processes.js"
import * as m0016 from "./internal/migrations/0016_capacity_and_routing.js"
import * as m0017 from "./internal/migrations/0017_cancel_requests.js"

/** Every migration by name, in order. Names sort in the order they apply; never rename one. */
export const migrations: Readonly<Record<string, Migration>> = {
  "0001_initial": m0001,
  "0002_queue_indexes": m0002,
  "0003_signing_key_grace": m0003,
  "0004_cancel_and_idempotency": m0004,
  "0005_fair_claims": m0005,
  "0006_sliding_rate_limit_and_key_revision": m0006,
  "0007_retention_and_tracing": m0007,
  "0008_execution_reports": m0008,
  "0009_execution_list_and_redelivery": m0009,
  "0010_operator_secrets": m0010,
  "0011_fewer_execution_indexes": m0011,
  "0012_key_hints_and_uses": m0012,
  "0013_media_stores": m0013,
  "0014_webhook_events": m0014,
  "0015_processes": m0015,
  "0016_capacity_and_routing": m0016,
  "0017_cancel_requests": m0017
}

/** Name of the newest migration. */
export const latest = "0017_cancel_requests"

/** The table that records applied migrations. */
export const migrationTable = "appexec_migrations"

/** A kysely `Migrator` over appexec's migrations. */
export const migrator = (db: Kysely<unknown>): Migrator =>
  new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: migrationTable,
    migrationLockTableName: `${migrationTable}_lock`
  })

/** Applies the migrations up to `target` (default: all of them); an error is returned in the result set. */
export const migrateTo = (db: Kysely<unknown>, target: string = latest): Promise<MigrationResultSet> =>
  target === latest ? migrator(db).migrateToLatest() : migrator(db).migrateTo(target)

/**
 * Brings `db` to `latest`, or, when `migrate` is false, checks that it is there; the migrations it
 * applied. Refuses a database that a newer appexec migrated (`SqlMigrations.upgrade`).
 */
export const upgrade = (db: Kysely<unknown>, migrate: boolean) =>
  SqlMigrations.upgrade(db, migrator(db), { known: Object.keys(migrations), table: migrationTable }, migrate)
