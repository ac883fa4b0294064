/**
 * The two databases the `appexec` command runs on, for suites that run once on each: SQLite
 * under `--data`, and PostgreSQL through `APPEXEC_DATABASE_URL` (a fresh database per test on the
 * test run's server, see `globalSetup`). The environment a backend gives is added to every
 * command of the test, so `serve`, `worker` and the admin commands meet in one database.
 */
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import pg from "pg"
import * as TestDatabase from "../../../postgres/test/support/TestDatabase.js"

/** One database of the command. */
export interface Backend {
  readonly name: "sqlite" | "postgres"
  /** The environment of the test's commands: a fresh database. */
  readonly env: Effect.Effect<Record<string, string>>
  /** The bytes stored under a blob key, where this backend keeps media. */
  readonly blob: (dataDir: string, env: Record<string, string>, key: string) => Effect.Effect<Uint8Array | undefined>
  /** The key that signs media URLs. */
  readonly mediaSecret: (dataDir: string, env: Record<string, string>) => Effect.Effect<Uint8Array>
}

/** Runs one query on the database of `env`. */
export const query = <R extends object>(env: Record<string, string>, text: string, values: Array<unknown> = []) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: env["APPEXEC_DATABASE_URL"]! })
    await client.connect()
    try {
      return (await client.query<R>(text, values)).rows
    } finally {
      await client.end()
    }
  })

export const sqlite: Backend = {
  name: "sqlite",
  env: Effect.succeed({}),
  blob: (dataDir, _, key) =>
    Effect.try(() => new Uint8Array(readFileSync(join(dataDir, "media", key)))).pipe(
      Effect.orElseSucceed(() => undefined)
    ),
  mediaSecret: (dataDir) => Effect.sync(() => new Uint8Array(readFileSync(join(dataDir, "media.secret"))))
}

export const postgres: Backend = {
  name: "postgres",
  // Every process on one database seals and opens the signing keys with one master key.
  env: Effect.promise(() => TestDatabase.create("serve")).pipe(
    Effect.map((url) => ({
      APPEXEC_DATABASE_URL: url,
      APPEXEC_MASTER_KEY: randomBytes(32).toString("base64url")
    }))
  ),
  blob: (_, env, key) =>
    query<{ bytes: Buffer }>(env, "SELECT bytes FROM blobs WHERE key = $1", [key]).pipe(
      Effect.map((rows) => (rows[0] === undefined ? undefined : new Uint8Array(rows[0].bytes)))
    ),
  mediaSecret: (_, env) =>
    query<{ value: Buffer }>(env, "SELECT value FROM secrets WHERE name = 'media-urls'").pipe(
      Effect.map((rows) => new Uint8Array(rows[0]!.value))
    )
}

/** Both backends, for `for (const backend of backends) describe(…)`. */
export const backends: ReadonlyArray<Backend> = [sqlite, postgres]
