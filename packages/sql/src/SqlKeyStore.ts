/**
 * `KeyStore` on SQL, for every dialect: `workspaces`, `users` and `api_keys` (hashes only).
 * `keyRevision` is the adapter's to add: SQLite reads `key_revision` on its connection, PostgreSQL
 * together with the app revision (`internal/Revisions`).
 */
import { Errors, KeyStore } from "@appexec/core"
import { Effect, Layer, Option } from "effect"
import * as PreparedQuery from "./PreparedQuery.js"
import { keyOfRow, userOfRow, workspaceOfRow } from "./RowMapping.js"
import { SqlRunner } from "./SqlRunner.js"

/** The key store over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const db = runner.builder
  const workspaceColumns = [
    "workspace_id as workspaceId",
    "name",
    "created_at as createdAt",
    "max_running as maxRunning",
    "max_priority as maxPriority"
  ] as const
  const workspaceByName = PreparedQuery.make((p: PreparedQuery.Param<{ name: string }>) =>
    db.selectFrom("workspaces").select(workspaceColumns).where("name", "=", p("name"))
  )
  const workspaceById = PreparedQuery.make((p: PreparedQuery.Param<{ workspaceId: string }>) =>
    db.selectFrom("workspaces").select(workspaceColumns).where("workspace_id", "=", p("workspaceId"))
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
        "hint_tail as hintTail",
        "created_at as createdAt",
        "revoked_at as revokedAt",
        "last_used_at as lastUsedAt"
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
    getWorkspace: Effect.fn("SqlKeyStore.getWorkspace")((workspaceId) =>
      runner
        .first("get workspace", workspaceById.bind({ workspaceId }))
        .pipe(Effect.map((row) => Option.map(Option.fromNullable(row), workspaceOfRow)))
    ),
    listWorkspaces: runner
      .all(
        "list workspaces",
        db
          .selectFrom("workspaces")
          .select(workspaceColumns)
          .orderBy("created_at")
          .orderBy("workspace_id")
      )
      .pipe(Effect.map((rows) => rows.map(workspaceOfRow)), Effect.withSpan("SqlKeyStore.listWorkspaces")),
    setWorkspaceLimits: Effect.fn("SqlKeyStore.setWorkspaceLimits")(function*(workspaceId, limits) {
      const changed = yield* runner.run(
        "set workspace limits",
        db
          .updateTable("workspaces")
          .set({
            // A column set to itself when its limit is left out: the statement always sets something.
            max_running: (eb) => limits.maxRunning === undefined ? eb.ref("max_running") : eb.val(limits.maxRunning),
            max_priority: (eb) => limits.maxPriority === undefined ? eb.ref("max_priority") : eb.val(limits.maxPriority)
          })
          .where("workspace_id", "=", workspaceId)
      )
      return changed > 0
    }),
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
          hint_tail: key.hintTail,
          created_at: key.createdAt,
          revoked_at: key.revokedAt,
          last_used_at: key.lastUsedAt
        })
      ).pipe(Effect.asVoid)
    ),
    // Every authenticated request runs it: untraced.
    findKeyByHash: (hash) =>
      Effect.map(
        runner.first("find api key", keyByHash.bind({ hash })),
        (row) => (row === undefined ? Option.none() : Option.some(keyOfRow(row)))
      ),
    revokeKey: Effect.fn("SqlKeyStore.revokeKey")((idOrHint, at) =>
      runner.run(
        "revoke api key",
        db
          .updateTable("api_keys")
          .set({ revoked_at: at })
          .where("revoked_at", "is", null)
          .where((eb) => eb.or([eb("api_key_id", "=", idOrHint), eb("hint", "=", idOrHint)]))
      )
    ),
    listKeys: runner
      .all(
        "list api keys",
        db
          .selectFrom("api_keys as k")
          .innerJoin("workspaces as w", "w.workspace_id", "k.workspace_id")
          .innerJoin("users as u", "u.user_id", "k.user_id")
          .select([
            "k.api_key_id as apiKeyId",
            "k.workspace_id as workspaceId",
            "k.user_id as userId",
            "k.hash as hash",
            "k.hint as hint",
            "k.hint_tail as hintTail",
            "k.created_at as createdAt",
            "k.revoked_at as revokedAt",
            "k.last_used_at as lastUsedAt",
            "w.name as workspace",
            "u.name as user"
          ])
          .where("k.revoked_at", "is", null)
          .orderBy("k.created_at")
          .orderBy("k.api_key_id")
      )
      .pipe(
        Effect.map((rows) =>
          rows.map(({ user, workspace, ...key }): KeyStore.KeyListing => ({ key: keyOfRow(key), workspace, user }))
        ),
        Effect.withSpan("SqlKeyStore.listKeys")
      ),
    markUsed: Effect.fn("SqlKeyStore.markUsed")(function*(uses) {
      for (const use of uses) {
        yield* runner.run(
          "record api key use",
          db
            .updateTable("api_keys")
            .set((eb) => ({
              last_used_at: use.at,
              hint_tail: eb.fn.coalesce("hint_tail", eb.val(use.hintTail))
            }))
            .where("api_key_id", "=", use.apiKeyId)
            .where((eb) => eb.or([eb("last_used_at", "is", null), eb("last_used_at", "<", use.at)]))
        )
      }
    })
  }
  return service
})

/** Layer of the key store; needs the runner of an adapter. */
export const layer = Layer.effect(KeyStore.KeyStore, make)
