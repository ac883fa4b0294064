/**
 * The storage's lock on PostgreSQL (`StorageLock`): a session advisory lock
 * (`pg_advisory_lock`) on a connection of its own, outside the pool, so that work under the lock
 * may use every connection of the pool (a pool of one included). The key is a hash of the
 * instance's schema and the lock's name: instances in other schemas of the database do not wait
 * for each other. The connection ends when the work does, and with it the lock; a process that
 * dies mid-work releases it too (its connection closes).
 */
import { Errors, StorageLock } from "@appexec/core"
import { Effect, Layer } from "effect"
import type pg from "pg"
import { PostgresClient } from "../PostgresClient.js"
import { loadPg } from "./Driver.js"

const storageError = (cause: unknown) => new Errors.StorageError({ operation: "lock", cause })

/** Connects and waits for the lock `key` (no statement timeout: the wait is as long as the holder's work). */
const acquire = (config: pg.ClientConfig, key: string) =>
  Effect.tryPromise({
    try: async () => {
      const connection = new (loadPg().Client)(config)
      // A connection that drops fails its query; without a listener its `error` would end the process.
      connection.on("error", () => {})
      try {
        await connection.connect()
        await connection.query("SET statement_timeout = 0")
        await connection.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [key])
        return connection
      } catch (cause) {
        await connection.end().catch(() => undefined)
        throw cause
      }
    },
    catch: storageError
  })

/** `StorageLock` over the instance's database. */
export const layer: Layer.Layer<StorageLock.StorageLock, never, PostgresClient> = Layer.effect(
  StorageLock.StorageLock,
  Effect.map(PostgresClient, (client) => ({
    withLock: (name) => (effect) =>
      Effect.acquireUseRelease(
        acquire(client.connectionConfig, `appexec:${client.schema}:${name}`),
        () => effect,
        // Ending the session releases the lock.
        (connection) => Effect.promise(() => connection.end().catch(() => undefined))
      )
  }))
)
