/**
 * API keys and workspaces: creation, revocation, and the authentication of every request. Keys
 * that authenticated are kept in memory while the store's key revision stays where it was; the
 * revision is read once per turn of the event loop (`RevisionMemo`), and again at once after a
 * revocation through this facade, so a key revoked here is refused by the very next request, and
 * one revoked by another process by every request of a turn that begins after it committed.
 */
import type { Authentication } from "@appexec/api"
import { ApiKeyId, UserId, WorkspaceId } from "@appexec/api/Ids"
import { type Context, Effect, Option, type Scope } from "effect"
import type { Appexec } from "../Appexec.js"
import { AppexecConfig } from "../AppexecConfig.js"
import { type StorageError, Unauthorized } from "../Errors.js"
import { IdGenerator } from "../IdGenerator.js"
import { type ApiKeyRecord, KeyStore, type UserRecord, type WorkspaceRecord } from "../KeyStore.js"
import * as RevisionMemo from "../RevisionMemo.js"
import { credentialFrom, hashKey, hintOf, isWellFormed, KEY_RANDOM_BYTES } from "./ApiKeys.js"

type Principal = Authentication.Principal

/** Authenticated keys kept in memory (see `authenticate`). */
export const KEY_CACHE_SIZE = 10_000

/** An API key just created: the key itself (shown once) and its stored record. */
export interface CreatedKey {
  readonly key: string
  readonly record: ApiKeyRecord
  readonly workspace: WorkspaceRecord
  readonly user: UserRecord
}

/**
 * The key id of a principal that no API key authenticated: a host acting in-process as a user of
 * a workspace (`Appexec.workspaces.principal`). No stored key has it.
 */
export const IN_PROCESS_KEY_ID = ApiKeyId.make("00000000-0000-0000-0000-000000000000")

/** The headers a credential is read from. */
export interface CredentialHeaders {
  readonly "x-api-key"?: string | undefined
  readonly authorization?: string | undefined
}

/** The keys and workspaces of the facade; the revision memo's reads are forked in the scope. */
export const make: Effect.Effect<
  Context.Tag.Service<Appexec>["keys"] & {
    readonly ensureWorkspace: Context.Tag.Service<Appexec>["workspaces"]["create"]
    readonly principal: Context.Tag.Service<Appexec>["workspaces"]["principal"]
  },
  never,
  AppexecConfig | KeyStore | IdGenerator | Scope.Scope
> = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const keyStore = yield* KeyStore
  const ids = yield* IdGenerator
  const now = Effect.clockWith((clock) => clock.currentTimeMillis)

  /**
   * Keys that authenticated, by the key as presented, while the store's key revision stays where
   * it was when they were cached: any revocation moves the revision and empties the cache, so a
   * revoked key is refused at its next request, also when another process revoked it. Keyed by
   * the key itself rather than its hash, so that a hit costs no hashing; the same string is in
   * every request that presents it. At most `KEY_CACHE_SIZE` keys, the least recently used
   * dropped first; unknown keys are never cached. The memo's reads never overlap and come in
   * order, so a revision, once passed, does not come back; what is cached under a revision was
   * looked up in the store after it was read, so no key revoked before that read passes.
   */
  const keyCache = new Map<string, Principal>()
  let cachedRevision: number | undefined
  const revision = keyStore.keyRevision === undefined ? undefined : yield* RevisionMemo.make(keyStore.keyRevision)

  const lookUpKey = Effect.fnUntraced(function*(key: string) {
    const record = yield* keyStore.findKeyByHash(hashKey(key))
    if (Option.isNone(record)) return yield* new Unauthorized({ reason: "unknown" })
    if (record.value.revokedAt !== null) return yield* new Unauthorized({ reason: "revoked" })
    const principal: Principal = {
      workspaceId: record.value.workspaceId,
      userId: record.value.userId,
      apiKeyId: record.value.apiKeyId
    }
    return principal
  })

  /** The key from the cache while the revision stays `revision`, else from the store. */
  const authenticateAt = (key: string, revision: number): Effect.Effect<Principal, Unauthorized | StorageError> => {
    if (revision !== cachedRevision) {
      keyCache.clear()
      cachedRevision = revision
    }
    const cached = keyCache.get(key)
    if (cached !== undefined) {
      keyCache.delete(key)
      keyCache.set(key, cached)
      return Effect.succeed(cached)
    }
    return Effect.tap(lookUpKey(key), (principal) => {
      // Cached under the revision read before the lookup: a revocation in between moves it.
      if (cachedRevision !== revision) return
      keyCache.set(key, principal)
      if (keyCache.size > KEY_CACHE_SIZE) keyCache.delete(keyCache.keys().next().value!)
    })
  }

  const authenticateKey = (key: string): Effect.Effect<Principal, Unauthorized | StorageError> =>
    revision === undefined ? lookUpKey(key) : Effect.flatMap(revision.get, (now) => authenticateAt(key, now))

  const ensureWorkspace = (name: string) =>
    Effect.gen(function*() {
      const existing = yield* keyStore.findWorkspace(name)
      if (Option.isSome(existing)) return existing.value
      return yield* keyStore.ensureWorkspace({
        workspaceId: WorkspaceId.make(yield* ids.uuid),
        name,
        createdAt: yield* now
      })
    })

  /** The workspace and its user, each created by name when missing. */
  const ensureUser = (options: { readonly workspace: string; readonly user?: string | undefined }) =>
    Effect.gen(function*() {
      const workspace = yield* ensureWorkspace(options.workspace)
      const user = yield* keyStore.ensureUser({
        userId: UserId.make(yield* ids.uuid),
        workspaceId: workspace.workspaceId,
        name: options.user ?? "default",
        createdAt: yield* now
      })
      return { workspace, user }
    })

  return {
    create: Effect.fn("Appexec.keys.create")(
      function*(options: { readonly workspace: string; readonly user?: string | undefined }) {
        const { user, workspace } = yield* ensureUser(options)
        const key = `${config.keyPrefix}${yield* ids.token(KEY_RANDOM_BYTES)}`
        const record: ApiKeyRecord = {
          apiKeyId: ApiKeyId.make(yield* ids.uuid),
          workspaceId: workspace.workspaceId,
          userId: user.userId,
          hash: hashKey(key),
          hint: hintOf(key, config.keyPrefix),
          createdAt: yield* now,
          revokedAt: null
        }
        yield* keyStore.insertKey(record)
        return { key, record, workspace, user }
      }
    ),
    revoke: Effect.fn("Appexec.keys.revoke")((idOrHint: string) => {
      const revoke = Effect.flatMap(now, (at) => keyStore.revokeKey(idOrHint, at))
      // Once it committed (or failed), this turn's read of the revision is stale: the next request reads again.
      return revision === undefined ? revoke : Effect.ensuring(revoke, revision.invalidate)
    }),
    // Every request runs it: untraced, and without a generator.
    authenticate: (headers: CredentialHeaders) => {
      const key = credentialFrom(headers)
      if (key === undefined) return Effect.fail(new Unauthorized({ reason: "missing" }))
      if (!isWellFormed(key, config.keyPrefix)) return Effect.fail(new Unauthorized({ reason: "malformed" }))
      return authenticateKey(key)
    },
    list: Effect.fn("Appexec.keys.list")(function*(options?: { readonly workspace?: string | undefined }) {
      if (options?.workspace === undefined) return yield* keyStore.listKeys()
      const workspace = yield* keyStore.findWorkspace(options.workspace)
      return Option.isNone(workspace) ? [] : yield* keyStore.listKeys(workspace.value.workspaceId)
    }),
    ensureWorkspace: Effect.fn("Appexec.workspaces.create")(ensureWorkspace),
    principal: Effect.fn("Appexec.workspaces.principal")(
      function*(options: { readonly workspace: string; readonly user?: string | undefined }) {
        const { user, workspace } = yield* ensureUser(options)
        const principal: Principal = {
          workspaceId: workspace.workspaceId,
          userId: user.userId,
          apiKeyId: IN_PROCESS_KEY_ID
        }
        return principal
      }
    )
  }
})
