/**
 * The pool survives its database going away under it: a connection that drops while it is
 * checked out (a transaction between two statements, as a claim or a renewal can be when the
 * server restarts or a proxy cuts it) fails that work with a `StorageError` and does not end the
 * process; the next statement runs on a new connection.
 */
import { PostgresClient } from "@appexec/postgres"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { sql } from "kysely"
import pg from "pg"
import * as TestDatabase from "./support/TestDatabase.js"

const database = TestDatabase.create("client")
const applicationName = "appexec-drop-test"
const clientLayer = Layer.unwrapEffect(
  Effect.map(
    Effect.promise(() => database),
    (connectionString) => PostgresClient.layer({ connectionString, schema: "drops", applicationName, poolSize: 2 })
  )
)

/** Ends, from another connection, every backend of `applicationName`. */
const terminate = async (connectionString: string, applicationName: string) => {
  const admin = new pg.Client({ connectionString })
  await admin.connect()
  try {
    const ended = await admin.query(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1",
      [applicationName]
    )
    return ended.rowCount ?? 0
  } finally {
    await admin.end()
  }
}

describe("PostgresClient", () => {
  it.scoped("a connection that drops while checked out fails its work, not the process", () =>
    Effect.gen(function*() {
      const connectionString = yield* Effect.promise(() => database)
      const client = yield* PostgresClient.PostgresClient
      const held = yield* Effect.either(client.transaction("hold", async (trx) => {
        await sql`SELECT 1`.execute(trx)
        expect(await terminate(connectionString, applicationName)).toBeGreaterThan(0)
        // The connection is checked out and idle in its transaction when its backend ends.
        await sql`SELECT 1`.execute(trx)
      }))
      expect(Either.isLeft(held)).toBe(true)
      const after = yield* client.execute("after", (db) => sql<{ one: number }>`SELECT 1 AS one`.execute(db))
      expect(after.rows).toEqual([{ one: 1 }])
    }).pipe(Effect.provide(clientLayer)))
})
