/**
 * A database of its own for each test file, on the test run's server (`globalSetup`), and a
 * schema of its own for each test that needs fresh storage: suites never see each other's rows.
 */
import { PostgresStorage } from "@appexec/postgres"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import pg from "pg"
import { inject } from "vitest"

/** A fresh, empty database named after `label`; its URL. */
export const create = async (label: string): Promise<string> => {
  const admin = new URL(inject("postgresUrl"))
  const name = `${label.toLowerCase().replace(/[^a-z0-9]+/g, "_").slice(0, 40)}_${randomBytes(4).toString("hex")}`
  const client = new pg.Client({ connectionString: admin.href })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`)
  } finally {
    await client.end()
  }
  const url = new URL(admin.href)
  url.pathname = `/${name}`
  return url.href
}

let schemas = 0

/**
 * Fresh storage for each call, in a new schema of the database at `url` (a promise, so that the
 * database of a file is made once, before the first test needs it).
 */
export const freshStorage = (url: Promise<string>, options: Partial<PostgresStorage.Options> = {}) => () =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => url),
      (connectionString) =>
        PostgresStorage.layer({ connectionString, schema: `t${++schemas}`, poolSize: 4, ...options })
    )
  )

/**
 * One process's storage on `schema` of the database at `url`: several such layers on one schema
 * are several processes sharing one instance's tables.
 */
export const storageOn = (url: Promise<string>, schema: string) =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => url),
      (connectionString) => PostgresStorage.layer({ connectionString, schema, poolSize: 2 })
    )
  )
