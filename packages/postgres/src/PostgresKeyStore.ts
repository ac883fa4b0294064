/**
 * `KeyStore` on PostgreSQL: `workspaces`, `users` and `api_keys` (hashes only).
 */
import { KeyStore } from "@appexec/core"
import { Effect, Layer } from "effect"
import { decode } from "./internal/RowDecoding.js"
import { PostgresClient } from "./PostgresClient.js"

const decodeWorkspace = decode(KeyStore.WorkspaceRecord, "read workspace")
const decodeUser = decode(KeyStore.UserRecord, "read user")
const decodeKey = decode(KeyStore.ApiKeyRecord, "read api key")

/** The key store over the instance's pool. */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const workspaceByName = (db: PostgresClient["Type"]["db"], name: string) =>
    db
      .selectFrom("workspaces")
      .select(["workspace_id as workspaceId", "name", "created_at as createdAt"])
      .where("name", "=", name)
      .executeTakeFirst()

  const service: KeyStore.KeyStore["Type"] = {
    ensureWorkspace: Effect.fn("PostgresKeyStore.ensureWorkspace")((workspace) =>
      client
        .execute("ensure workspace", async (db) => {
          await db
            .insertInto("workspaces")
            .values({ workspace_id: workspace.workspaceId, name: workspace.name, created_at: workspace.createdAt })
            .onConflict((oc) => oc.column("name").doNothing())
            .execute()
          // Read after the insert, outside its statement: a concurrent insert of the same name has committed.
          return workspaceByName(db, workspace.name)
        })
        .pipe(Effect.flatMap(decodeWorkspace))
    ),
    findWorkspace: Effect.fn("PostgresKeyStore.findWorkspace")((name) =>
      client
        .execute("find workspace", (db) => workspaceByName(db, name))
        .pipe(Effect.flatMap((row) => (row === undefined ? Effect.succeedNone : Effect.asSome(decodeWorkspace(row)))))
    ),
    ensureUser: Effect.fn("PostgresKeyStore.ensureUser")((user) =>
      client
        .execute("ensure user", async (db) => {
          await db
            .insertInto("users")
            .values({
              user_id: user.userId,
              workspace_id: user.workspaceId,
              name: user.name,
              created_at: user.createdAt
            })
            .onConflict((oc) => oc.columns(["workspace_id", "name"]).doNothing())
            .execute()
          return db
            .selectFrom("users")
            .select(["user_id as userId", "workspace_id as workspaceId", "name", "created_at as createdAt"])
            .where("workspace_id", "=", user.workspaceId)
            .where("name", "=", user.name)
            .executeTakeFirst()
        })
        .pipe(Effect.flatMap(decodeUser))
    ),
    insertKey: Effect.fn("PostgresKeyStore.insertKey")((key) =>
      client.execute("insert api key", async (db) => {
        await db
          .insertInto("api_keys")
          .values({
            api_key_id: key.apiKeyId,
            workspace_id: key.workspaceId,
            user_id: key.userId,
            hash: key.hash,
            hint: key.hint,
            created_at: key.createdAt,
            revoked_at: key.revokedAt
          })
          .execute()
      })
    ),
    findKeyByHash: Effect.fn("PostgresKeyStore.findKeyByHash")((hash) =>
      client
        .execute("find api key", (db) =>
          db
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
            .where("hash", "=", hash)
            .executeTakeFirst())
        .pipe(Effect.flatMap((row) => (row === undefined ? Effect.succeedNone : Effect.asSome(decodeKey(row)))))
    ),
    revokeKey: Effect.fn("PostgresKeyStore.revokeKey")((idOrHint, at) =>
      client.execute("revoke api key", async (db) => {
        const result = await db
          .updateTable("api_keys")
          .set({ revoked_at: at })
          .where("revoked_at", "is", null)
          .where((eb) => eb.or([eb("api_key_id", "=", idOrHint), eb("hint", "=", idOrHint)]))
          .executeTakeFirst()
        return Number(result.numUpdatedRows)
      })
    )
  }
  return service
})

/** Layer of the key store; needs the pool (see `PostgresStorage`). */
export const layer = Layer.effect(KeyStore.KeyStore, make)
