/**
 * Where a database stands against the migrations a process knows, and the one way each adapter
 * brings it up to date (kysely's `Migrator`, whose `migrationTable` records what ran). Before the
 * migrator touches anything, the recorded names are read: a name this process does not know means
 * a newer appexec migrated the database, and the process refuses to start, changing nothing (the
 * migrator would call it "corrupted migrations"); migrations this process knows and the database
 * lacks are applied, or, when it was told not to migrate (`appexec migrate` does it alone), the
 * start is refused with what to run.
 */
import { Errors } from "@appexec/core"
import { Effect, Schema } from "effect"
import type { Kysely, Migrator } from "kysely"

/** What a database has of the migrations a process knows. */
export interface MigrationState {
  /** The migrations recorded in the database, in the order of their names. */
  readonly applied: ReadonlyArray<string>
  /** Migrations this process knows and the database lacks, in order. */
  readonly pending: ReadonlyArray<string>
  /** Migrations recorded in the database that this process does not know (a newer appexec's). */
  readonly unknown: ReadonlyArray<string>
}

/** Where the migrations of an adapter are recorded, and which it knows. */
export interface MigrationTable {
  /** Every migration's name this process knows, in order. */
  readonly known: ReadonlyArray<string>
  /** The table that records applied migrations. */
  readonly table: string
  /** Its schema (PostgreSQL); absent: the connection's (SQLite). */
  readonly schema?: string | undefined
}

/** Reads what `db` records of migrations, without creating anything (no table: none applied). */
export const stateOf = async (db: Kysely<unknown>, where: MigrationTable): Promise<MigrationState> => {
  const tables = await db.introspection.getTables()
  const exists = tables.some((t) =>
    t.name === where.table && (where.schema === undefined || t.schema === undefined || t.schema === where.schema)
  )
  const named = db as unknown as Kysely<Record<string, { name: string }>>
  const rows = exists
    ? await (where.schema === undefined ? named : named.withSchema(where.schema))
      .selectFrom(where.table)
      .select("name")
      .orderBy("name")
      .execute()
    : []
  const applied = rows.map((r) => r.name)
  const done = new Set(applied)
  const known = new Set(where.known)
  return {
    applied,
    pending: where.known.filter((name) => !done.has(name)),
    unknown: applied.filter((name) => !known.has(name))
  }
}

/** The sentence that refuses a start on a database a newer appexec migrated. */
export const newerMessage = (state: MigrationState) =>
  `this database was migrated by a newer appexec (migration ${state.unknown.at(-1)}); upgrade this process`

/** The sentence that refuses a start told not to migrate on a database that lacks migrations. */
export const behindMessage = (state: MigrationState) =>
  `${
    state.applied.length === 0
      ? "the database has no appexec tables yet"
      : `the database is at migration ${state.applied.at(-1)}`
  } and this appexec needs ${state.pending.at(-1)}: run \`appexec migrate\` (or start without --no-migrate)`

/** Why a start was refused before any migration ran: the database is newer, or behind and not to be migrated. */
export class MigrationRefused extends Schema.TaggedError<MigrationRefused>()("MigrationRefused", {
  message: Schema.String
}) {}

/** Whether `error` is a refusal (`MigrationRefused`), which no retry changes. */
export const isRefusal = (error: Errors.StorageError): boolean => error.cause instanceof MigrationRefused

const refused = (message: string) =>
  new Errors.StorageError({ operation: "migrate", cause: new MigrationRefused({ message }) })

/**
 * Brings `db` to the newest migration of `where.known` with `migrator`, or checks that it is
 * there when `migrate` is false; the names of the migrations it applied. Refuses (a `StorageError`
 * of operation `migrate`, changing nothing) a database that a newer appexec migrated, and one that
 * lacks migrations when told not to migrate. `beforeMigrating` runs only when there is something
 * to apply (PostgreSQL creates the schema then: a role with data rights alone may not).
 */
export const upgrade = (
  db: Kysely<unknown>,
  migrator: Migrator,
  where: MigrationTable,
  migrate: boolean,
  beforeMigrating: () => Promise<unknown> = async () => undefined
): Effect.Effect<ReadonlyArray<string>, Errors.StorageError> =>
  Effect.gen(function*() {
    const state = yield* Effect.tryPromise({
      try: () => stateOf(db, where),
      catch: (cause) => new Errors.StorageError({ operation: "migrate", cause })
    })
    if (state.unknown.length > 0) return yield* refused(newerMessage(state))
    if (state.pending.length === 0) return []
    if (!migrate) return yield* refused(behindMessage(state))
    const { error, results } = yield* Effect.tryPromise({
      try: () => beforeMigrating().then(() => migrator.migrateToLatest()),
      catch: (cause) => new Errors.StorageError({ operation: "migrate", cause })
    })
    if (error !== undefined) return yield* new Errors.StorageError({ operation: "migrate", cause: error })
    return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName)
  })
