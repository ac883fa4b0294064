/**
 * The key revision on PostgreSQL (migration 0009) between processes: a revocation made through
 * one process's storage moves the revision another process reads, so the key cache of the
 * other's facade refuses the revoked key from its next turn; keys created do not move it.
 */
import { Appexec, AppexecLayer, IdGenerator, KeyStore } from "@appexec/core"
import { PostgresStorage } from "@appexec/postgres"
import { TestOutboundHttp } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import pg from "pg"
import * as TestDatabase from "./support/TestDatabase.js"

const database = TestDatabase.create("keys")
let schemas = 0

/** One process's storage on `schema` of the test database. */
const storage = (schema: string) =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => database),
      (connectionString) => PostgresStorage.layer({ connectionString, schema, poolSize: 2 })
    )
  )

/** An instance (the facade over its own storage) on `schema`: one API process. */
const instance = (schema: string) =>
  AppexecLayer.make({ webhooks: false, config: { drainTimeout: 0 } }).pipe(
    Layer.provideMerge(storage(schema)),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(TestOutboundHttp.layer)
  )

const nextTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

describe("PostgreSQL key revision", () => {
  it.live("a revocation through one process moves the revision the other reads; a key created does not", () =>
    Effect.gen(function*() {
      const schema = `keys${++schemas}`
      // One after the other: the second finds the schema migrated.
      const first = Context.get(yield* Layer.build(storage(schema)), KeyStore.KeyStore)
      const second = Context.get(yield* Layer.build(storage(schema)), KeyStore.KeyStore)
      const read = first.keyRevision
      expect(read).toBeDefined()
      const initial = yield* read!
      const appexec = Context.get(yield* Layer.build(instance(schema)), Appexec.Appexec)
      const created = yield* appexec.keys.create({ workspace: "w" })
      expect(yield* read!).toBe(initial)
      expect(yield* second.revokeKey(created.record.apiKeyId, 1)).toBe(1)
      const moved = yield* read!
      expect(moved).toBeGreaterThan(initial)
      // Straight in SQL, as an operator would: the trigger bumps it too.
      const client = new pg.Client({ connectionString: yield* Effect.promise(() => database) })
      yield* Effect.promise(() => client.connect())
      yield* Effect.addFinalizer(() => Effect.promise(() => client.end()))
      yield* Effect.promise(() =>
        client.query(`UPDATE ${schema}.api_keys SET revoked_at = 2 WHERE api_key_id = $1`, [created.record.apiKeyId])
      )
      expect(yield* read!).toBeGreaterThan(moved)
    }).pipe(Effect.scoped))

  it.live("a key cached by one process is refused from its next turn once another process revoked it", () =>
    Effect.gen(function*() {
      const schema = `keys${++schemas}`
      const api = Context.get(yield* Layer.build(instance(schema)), Appexec.Appexec)
      const other = Context.get(yield* Layer.build(instance(schema)), Appexec.Appexec)
      const created = yield* api.keys.create({ workspace: "w" })
      const kept = yield* api.keys.create({ workspace: "w", user: "kept" })
      for (let i = 0; i < 3; i++) {
        expect((yield* api.keys.authenticate({ "x-api-key": created.key })).apiKeyId).toBe(created.record.apiKeyId)
      }
      yield* api.keys.authenticate({ "x-api-key": kept.key })
      // Through the other process, as `appexec keys revoke` does.
      expect(yield* other.keys.revoke(created.record.apiKeyId)).toBe(1)
      yield* nextTurn
      const refused = yield* Effect.flip(api.keys.authenticate({ "x-api-key": created.key }))
      expect(refused).toMatchObject({ _tag: "Unauthorized", reason: "revoked" })
      expect((yield* api.keys.authenticate({ "x-api-key": kept.key })).apiKeyId).toBe(kept.record.apiKeyId)
    }).pipe(Effect.scoped))

  it.live("a key revoked through the same process is refused by its very next request", () =>
    Effect.gen(function*() {
      const api = Context.get(yield* Layer.build(instance(`keys${++schemas}`)), Appexec.Appexec)
      const created = yield* api.keys.create({ workspace: "w" })
      yield* api.keys.authenticate({ "x-api-key": created.key })
      expect(yield* api.keys.revoke(created.record.hint)).toBe(1)
      const refused = yield* Effect.flip(api.keys.authenticate({ "x-api-key": created.key }))
      expect(refused).toMatchObject({ _tag: "Unauthorized", reason: "revoked" })
    }).pipe(Effect.scoped))
})
