/**
 * `KeyStore` on SQL, for every dialect: `workspaces`, `users` and `api_keys` (hashes only).
 * `keyRevision` is the adapter's to add: SQLite reads `key_revision` on its connection, PostgreSQL
 * together with the app revision (`internal/Revisions`).
 */
import { Errors, KeyStore } from "@appexec/core"
import { Effect, Layer, Option } from "effect"
import * as PreparedQuery from "./PreparedQuery.js"
import { keyOfRow, listedKeyOfRow, userOfRow, workspaceOfRow } from "./RowMapping.js"
import { SqlRunner } from "./SqlRunner.js"

/** The key store over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const db = runner.builder
  const workspaceByName = PreparedQuery.make((p: PreparedQuery.Param<{ name: string }>) =>
    db
      .selectFrom("workspaces")
      .select(["workspace_id as workspaceId", "name", "created_at as createdAt"])
      .where("name", "=", p("name"))
  )
  const userByName = PreparedQuery.make((p: PreparedQuery.Param<{ workspaceId: string; name: string }>) =>
    db
      .selectFrom("users")
      .select(["user_id as userId", "workspace_id as workspaceId", "name", "created_at as createdAt"])
      .where("workspace_id", "=", p("workspaceId"))
      .where("name", "=", p("name"))
  )
  // Every authenticated request looks its key up: compiled once.
  const keyByHash = PreparedQuery.make((p: PreparedQuery.Param<{ hash: string }>) =>
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
      .where("hash", "=", p("hash"))
  )
  /**
   * The row the insert made, or the one that held its name: read after the insert, outside its
   * statement, so a concurrent insert of the same name has committed.
   */
  const inserted = <R, A>(operation: string, row: R | undefined, map: (row: R) => A) =>
    row === undefined
      ? Effect.fail(new Errors.StorageError({ operation, cause: "no row after the insert" }))
      : Effect.succeed(map(row))

  const service: KeyStore.KeyStore["Type"] = {
    ensureWorkspace: Effect.fn("SqlKeyStore.ensureWorkspace")(function*(workspace) {
      yield* runner.run(
        "ensure workspace",
        db
          .insertInto("workspaces")
          .values({ workspace_id: workspace.workspaceId, name: workspace.name, created_at: workspace.createdAt })
          .onConflict((oc) => oc.column("name").doNothing())
      )
      const row = yield* runner.first("ensure workspace", workspaceByName.bind({ name: workspace.name }))
      return yield* inserted("ensure workspace", row, workspaceOfRow)
    }),
    findWorkspace: Effect.fn("SqlKeyStore.findWorkspace")((name) =>
      runner
        .first("find workspace", workspaceByName.bind({ name }))
        .pipe(Effect.map((row) => Option.map(Option.fromNullable(row), workspaceOfRow)))
    ),
    ensureUser: Effect.fn("SqlKeyStore.ensureUser")(function*(user) {
      yield* runner.run(
        "ensure user",
        db
          .insertInto("users")
          .values({ user_id: user.userId, workspace_id: user.workspaceId, name: user.name, created_at: user.createdAt })
          .onConflict((oc) => oc.columns(["workspace_id", "name"]).doNothing())
      )
      const row = yield* runner.first(
        "ensure user",
        userByName.bind({ workspaceId: user.workspaceId, name: user.name })
      )
      return yield* inserted("ensure user", row, userOfRow)
    }),
    insertKey: Effect.fn("SqlKeyStore.insertKey")((key) =>
      runner.run(
        "insert api key",
        db.insertInto("api_keys").values({
          api_key_id: key.apiKeyId,
          workspace_id: key.workspaceId,
          user_id: key.userId,
          hash: key.hash,
          hint: key.hint,
          created_at: key.createdAt,
          revoked_at: key.revokedAt
        })
      ).pipe(Effect.asVoid)
    ),
    // Every authenticated request runs it: untraced.
    findKeyByHash: (hash) =>
      Effect.map(
        runner.first("find api key", keyByHash.bind({ hash })),
        (row) => (row === undefined ? Option.none() : Option.some(keyOfRow(row)))
      ),
    listKeys: Effect.fn("SqlKeyStore.listKeys")((workspaceId) => {
      const all = db
        .selectFrom("api_keys as k")
        .innerJoin("workspaces as w", "w.workspace_id", "k.workspace_id")
        .innerJoin("users as u", "u.user_id", "k.user_id")
        .select([
          "k.api_key_id as apiKeyId",
          "k.workspace_id as workspaceId",
          "w.name as workspaceName",
          "k.user_id as userId",
          "u.name as userName",
          "k.hint as hint",
          "k.created_at as createdAt",
          "k.revoked_at as revokedAt"
        ])
        .orderBy("k.created_at")
        .orderBy("k.api_key_id")
      const query = workspaceId === undefined ? all : all.where("k.workspace_id", "=", workspaceId)
      return Effect.map(runner.all("list api keys", query), (rows) => rows.map(listedKeyOfRow))
    }),
    revokeKey: Effect.fn("SqlKeyStore.revokeKey")((idOrHint, at) =>
      runner.run(
        "revoke api key",
        db
          .updateTable("api_keys")
          .set({ revoked_at: at })
          .where("revoked_at", "is", null)
          .where((eb) => eb.or([eb("api_key_id", "=", idOrHint), eb("hint", "=", idOrHint)]))
      )
    )
  }
  return service
})

/** Layer of the key store; needs the runner of an adapter. */
export const layer = Layer.effect(KeyStore.KeyStore, make)
