/**
 * The key and app revisions on PostgreSQL (migration 0008) between processes: a revocation made
 * through one process's storage moves the revision another process reads, so the key cache of the
 * other's facade refuses the revoked key from its next turn; keys created do not move it. An app
 * written by one process is read as written by the next read of another, whose app cache holds
 * while the app revision stays put.
 */
import { Ids } from "@appexec/api"
import { Appexec, AppexecLayer, AppStore, IdGenerator, KeyStore, RateLimitStore, RevisionMemo } from "@appexec/core"
import { TestOutboundHttp } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import pg from "pg"
import * as TestDatabase from "./support/TestDatabase.js"

const database = TestDatabase.create("keys")
let schemas = 0

/** One process's storage on `schema` of the test database. */
const storage = (schema: string) => TestDatabase.storageOn(database, schema)

/** An instance (the facade over its own storage) on `schema`: one API process. */
const instance = (schema: string) =>
  AppexecLayer.make({ webhooks: false, config: { drainTimeout: 0 } }).pipe(
    Layer.provideMerge(storage(schema)),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(TestOutboundHttp.layer)
  )

const nextTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

describe("PostgreSQL key and app revisions", () => {
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
      const updated = yield* read!
      expect(updated).toBeGreaterThan(moved)
      // Emptied by hand (migration 0011): TRUNCATE fires no DELETE trigger, the statement trigger moves it all the same.
      yield* Effect.promise(() => client.query(`TRUNCATE ${schema}.api_keys`))
      expect(yield* read!).toBeGreaterThan(updated)
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

  it.live("an app one process writes is read as written by the other's next get; unchanged, it is served from the cache", () =>
    Effect.gen(function*() {
      const schema = `apps${++schemas}`
      const a = yield* Layer.build(storage(schema))
      const b = yield* Layer.build(storage(schema))
      const [mine, theirs] = [Context.get(a, AppStore.AppStore), Context.get(b, AppStore.AppStore)]
      const workspaceId = Ids.WorkspaceId.make("00000000-0000-4000-8000-000000000001")
      yield* Context.get(a, KeyStore.KeyStore).ensureWorkspace({ workspaceId, name: "w", createdAt: 0 })
      const record: AppStore.AppRecord = {
        appId: Ids.AppId.make("00000000-0000-4000-8300-000000000001"),
        name: "app",
        description: null,
        isPublic: false,
        workspaceId,
        workflowId: Ids.WorkflowId.make("00000000-0000-4000-8400-000000000001"),
        createdAt: 1,
        updatedAt: 1
      }
      const version = (r: AppStore.AppRecord): AppStore.WorkflowVersion => ({
        workflowId: r.workflowId,
        appId: r.appId,
        definition: { name: r.name, nodes: [], edges: [] },
        createdAt: r.updatedAt
      })
      expect(yield* mine.get(record.appId)).toEqual(Option.none())
      yield* theirs.save(record, version(record))
      expect(yield* mine.get(record.appId)).toEqual(Option.some(record))
      // Made public with a new version by the other process: read so by the next get.
      const changed = {
        ...record,
        isPublic: true,
        workflowId: Ids.WorkflowId.make("00000000-0000-4000-8400-000000000002"),
        updatedAt: 2
      }
      yield* theirs.save(changed, version(changed))
      expect(yield* mine.get(record.appId)).toEqual(Option.some(changed))
      const client = new pg.Client({ connectionString: yield* Effect.promise(() => database) })
      yield* Effect.promise(() => client.connect())
      yield* Effect.addFinalizer(() => Effect.promise(() => client.end()))
      // Written behind the trigger's back, the row is not read again: the cache answers.
      yield* Effect.promise(() =>
        client.query(`ALTER TABLE ${schema}.apps DISABLE TRIGGER apps_revision;
          UPDATE ${schema}.apps SET name = 'renamed' WHERE app_id = '${record.appId}';
          ALTER TABLE ${schema}.apps ENABLE TRIGGER apps_revision`)
      )
      expect(yield* mine.get(record.appId)).toEqual(Option.some(changed))
      // Removed in SQL, as an operator would: the trigger moves the revision, the app is gone.
      yield* Effect.promise(() => client.query(`DELETE FROM ${schema}.workflow_versions; DELETE FROM ${schema}.apps`))
      expect(yield* mine.get(record.appId)).toEqual(Option.none())
    }).pipe(Effect.scoped))

  it.live("a request's rate-limit hit reads both revisions: its key is checked against that read, a later request's against a later one", () =>
    Effect.gen(function*() {
      const schema = `hits${++schemas}`
      const context = yield* Layer.build(storage(schema))
      const [keys, limits] = [
        Context.get(context, KeyStore.KeyStore),
        Context.get(context, RateLimitStore.RateLimitStore)
      ]
      const client = new pg.Client({ connectionString: yield* Effect.promise(() => database) })
      yield* Effect.promise(() => client.connect())
      yield* Effect.addFinalizer(() => Effect.promise(() => client.end()))
      const revision = Effect.map(
        Effect.promise(() => client.query<{ n: string }>(`SELECT revision AS n FROM ${schema}.key_revision`)),
        ({ rows }) => Number(rows[0]!.n)
      )
      /** Another process's revocation, straight in SQL: it moves the key revision. */
      const bump = Effect.promise(() => client.query(`UPDATE ${schema}.key_revision SET revision = revision + 1`))
      const request = (between: Effect.Effect<unknown>) =>
        RevisionMemo.withinRequest(Effect.gen(function*() {
          yield* limits.hit("client", 0, 60_000)
          yield* between
          yield* nextTurn
          return yield* keys.keyRevision!
        }))
      const initial = yield* revision
      // Moved after the hit read it: the request, which began before the move, takes the hit's read.
      expect(yield* request(bump)).toBe(initial)
      // A request that begins after the move sees it.
      expect(yield* request(Effect.void)).toBe(initial + 1)
    }).pipe(Effect.scoped))
})
