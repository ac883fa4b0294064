/**
 * `KeyStore` on SQLite: `workspaces`, `users` and `api_keys` (hashes only).
 */
import { KeyStore } from "@appexec/core"
import { Effect, Layer, Option } from "effect"
import * as PreparedQuery from "./internal/PreparedQuery.js"
import { decode } from "./internal/RowDecoding.js"
import { SqliteClient } from "./SqliteClient.js"

const decodeWorkspace = decode(KeyStore.WorkspaceRecord, "read workspace")
const decodeUser = decode(KeyStore.UserRecord, "read user")
const decodeKey = decode(KeyStore.ApiKeyRecord, "read api key")

/** The key store over the instance's connection. */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient
  const db = client.builder
  const workspaceByName = (name: string) =>
    db
      .selectFrom("workspaces")
      .select(["workspace_id as workspaceId", "name", "created_at as createdAt"])
      .where("name", "=", name)
  const keys = db
    .selectFrom("api_keys")
    .select([
      "api_key_id as apiKeyId",
      "workspace_id as workspaceId",
      "user_id as userId",
      "hash",
      "hint",
      "created_at as createdAt",
      "revoked_at as revokedAt"
    ])
  // Every authenticated request looks its key up: compiled once.
  const keyByHash = PreparedQuery.make((p: PreparedQuery.Param<{ hash: string }>) => keys.where("hash", "=", p("hash")))
  // Read on every authenticated request when keys are cached: one row, bumped by triggers.
  const revision = PreparedQuery.make(() => db.selectFrom("key_revision").select("revision").where("id", "=", 1))

  const service: KeyStore.KeyStore["Type"] = {
    ensureWorkspace: Effect.fn("SqliteKeyStore.ensureWorkspace")((workspace) =>
      client
        .transaction("ensure workspace", (c) => {
          c.run(
            db
              .insertInto("workspaces")
              .values({ workspace_id: workspace.workspaceId, name: workspace.name, created_at: workspace.createdAt })
              .onConflict((oc) => oc.column("name").doNothing())
          )
          return c.get(workspaceByName(workspace.name))
        })
        .pipe(Effect.flatMap(decodeWorkspace))
    ),
    findWorkspace: Effect.fn("SqliteKeyStore.findWorkspace")((name) =>
      client
        .execute("find workspace", (c) => c.get(workspaceByName(name)))
        .pipe(Effect.flatMap((row) => (row === undefined ? Effect.succeedNone : Effect.asSome(decodeWorkspace(row)))))
    ),
    ensureUser: Effect.fn("SqliteKeyStore.ensureUser")((user) =>
      client
        .transaction("ensure user", (c) => {
          c.run(
            db
              .insertInto("users")
              .values({
                user_id: user.userId,
                workspace_id: user.workspaceId,
                name: user.name,
                created_at: user.createdAt
              })
              .onConflict((oc) => oc.columns(["workspace_id", "name"]).doNothing())
          )
          return c.get(
            db
              .selectFrom("users")
              .select(["user_id as userId", "workspace_id as workspaceId", "name", "created_at as createdAt"])
              .where("workspace_id", "=", user.workspaceId)
              .where("name", "=", user.name)
          )
        })
        .pipe(Effect.flatMap(decodeUser))
    ),
    insertKey: Effect.fn("SqliteKeyStore.insertKey")((key) =>
      client.execute("insert api key", (c) => {
        c.run(
          db.insertInto("api_keys").values({
            api_key_id: key.apiKeyId,
            workspace_id: key.workspaceId,
            user_id: key.userId,
            hash: key.hash,
            hint: key.hint,
            created_at: key.createdAt,
            revoked_at: key.revokedAt
          })
        )
      })
    ),
    findKeyByHash: Effect.fnUntraced(function*(hash: string) {
      const row = yield* client.execute("find api key", (c) => c.get(keyByHash.bind({ hash })))
      return row === undefined ? Option.none() : Option.some(yield* decodeKey(row))
    }),
    keyRevision: client.execute("read key revision", (c) => c.get(revision.bind({}))?.revision ?? 0),
    revokeKey: Effect.fn("SqliteKeyStore.revokeKey")((idOrHint, at) =>
      client.execute("revoke api key", (c) =>
        c.run(
          db
            .updateTable("api_keys")
            .set({ revoked_at: at })
            .where("revoked_at", "is", null)
            .where((eb) => eb.or([eb("api_key_id", "=", idOrHint), eb("hint", "=", idOrHint)]))
        ))
    )
  }
  return service
})

/** Layer of the key store; needs the connection (see `SqliteStorage`). */
export const layer = Layer.effect(KeyStore.KeyStore, make)
