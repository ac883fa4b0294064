/**
 * API keys and workspaces: creation, revocation, and the authentication of every request. Keys
 * that authenticated are kept in memory while the store's key revision stays where it was; the
 * revision is read once per turn of the event loop (`RevisionMemo`), and again at once after a
 * revocation through this facade, so a key revoked here is refused by the very next request, and
 * one revoked by another process by every request of a turn that begins after it committed.
 * A key's use is recorded at most once per `KEY_USE_RESOLUTION` per process, after the answer's
 * way (a write of its own, never in the request's path), so `keys list` can say when it was last used.
 */
import type { Authentication } from "@appexec/api"
import { PRIORITY_MAX } from "@appexec/api/Execution"
import { ApiKeyId, UserId, WorkspaceId } from "@appexec/api/Ids"
import { type Context, Duration, Effect, FiberSet, Option, type Scope } from "effect"
import type { Appexec } from "../../Appexec.js"
import { AppexecConfig } from "../../AppexecConfig.js"
import { InvalidRequest, type StorageError, Unauthorized } from "../../Errors.js"
import { IdGenerator } from "../../IdGenerator.js"
import {
  type ApiKeyRecord,
  KeyStore,
  type UserRecord,
  type WorkspaceLimits,
  type WorkspaceRecord
} from "../../KeyStore.js"
import * as RevisionMemo from "../../RevisionMemo.js"
import * as ClaimPlan from "../engine/ClaimPlan.js"
import {
  credentialFrom,
  hashKey,
  hintOf,
  isWellFormed,
  KEY_RANDOM_BYTES,
  revokeTarget,
  shownHint,
  tailOf
} from "./ApiKeys.js"

type Principal = Authentication.Principal

/** Authenticated keys kept in memory (see `authenticate`). */
export const KEY_CACHE_SIZE = 10_000

/** How often, at most, one process records a key's use: `lastUsedAt` is true to about this. */
export const KEY_USE_RESOLUTION: Duration.DurationInput = "1 minute"

/** An active key as `keys list` shows it. */
export interface ListedKey {
  readonly apiKeyId: string
  /** As the console shows a key: `aex_Twbo…myLI` (`aex_Twbo12…` for a key whose end is not known yet). */
  readonly hint: string
  readonly workspace: string
  readonly user: string
  readonly createdAt: number
  readonly lastUsedAt: number | null
}

/** An API key just created: the key itself (shown once) and its stored record. */
export interface CreatedKey {
  readonly key: string
  /** Its hint as listings and the console show it (`aex_Twbo…myLI`), which `revoke` takes. */
  readonly hint: string
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
    readonly listWorkspaces: Context.Tag.Service<Appexec>["workspaces"]["list"]
    readonly setWorkspace: Context.Tag.Service<Appexec>["workspaces"]["set"]
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

  /**
   * When this process last recorded each key's use, by key id (at most `KEY_CACHE_SIZE`, the
   * oldest dropped first). A use is written when the last one is `KEY_USE_RESOLUTION` old, in a
   * fiber of its own: the request does not wait for it, and a failure is only logged.
   */
  const recordedUse = new Map<string, number>()
  const useResolution = Duration.toMillis(KEY_USE_RESOLUTION)
  const clock = yield* Effect.clock
  const runUseWrite = yield* FiberSet.makeRuntime<never, void, never>()
  const noteUse = (key: string, principal: Principal): void => {
    const at = clock.unsafeCurrentTimeMillis()
    const last = recordedUse.get(principal.apiKeyId)
    if (last !== undefined && at - last < useResolution) return
    recordedUse.delete(principal.apiKeyId)
    recordedUse.set(principal.apiKeyId, at)
    if (recordedUse.size > KEY_CACHE_SIZE) recordedUse.delete(recordedUse.keys().next().value!)
    runUseWrite(
      keyStore.markUsed([{ apiKeyId: principal.apiKeyId, at, hintTail: tailOf(key) }]).pipe(
        Effect.catchAll((error) => Effect.logWarning("the use of an API key could not be recorded", error))
      )
    )
  }
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

  /** The principal of `key` in the cache, made the most recently used, its use noted; none when not cached. */
  const hitCache = (key: string): Principal | undefined => {
    const principal = keyCache.get(key)
    if (principal === undefined) return undefined
    keyCache.delete(key)
    keyCache.set(key, principal)
    noteUse(key, principal)
    return principal
  }

  /** The key from the cache while the revision stays `revision`, else from the store. */
  const authenticateAt = (key: string, revision: number): Effect.Effect<Principal, Unauthorized | StorageError> => {
    if (revision !== cachedRevision) {
      keyCache.clear()
      cachedRevision = revision
    }
    const cached = hitCache(key)
    if (cached !== undefined) return Effect.succeed(cached)
    return Effect.tap(lookUpKey(key), (principal) => {
      noteUse(key, principal)
      // Cached under the revision read before the lookup: a revocation in between moves it.
      if (cachedRevision !== revision) return
      keyCache.set(key, principal)
      if (keyCache.size > KEY_CACHE_SIZE) keyCache.delete(keyCache.keys().next().value!)
    })
  }

  const authenticateKey = (key: string): Effect.Effect<Principal, Unauthorized | StorageError> =>
    revision === undefined
      ? Effect.tap(lookUpKey(key), (principal) => noteUse(key, principal))
      : Effect.flatMap(revision.get, (now) => authenticateAt(key, now))

  /**
   * The principal of a credential as the key cache holds it, with the key revision it was cached
   * under, without reading the revision: for a counted start (`CountedStarts`), whose statement
   * checks that revision. None when the key is not cached (or the store keeps no revision).
   */
  const cached = (
    headers: CredentialHeaders
  ): { readonly principal: Principal; readonly revision: number } | undefined => {
    if (cachedRevision === undefined) return undefined
    const key = credentialFrom(headers)
    if (key === undefined) return undefined
    const principal = hitCache(key)
    return principal === undefined ? undefined : { principal, revision: cachedRevision }
  }

  /** Revokes what `idKeyOrHint` names (see `ApiKeys.revokeTarget`); how many keys. */
  const revokeNamed = Effect.fnUntraced(function*(idKeyOrHint: string, at: number) {
    const target = revokeTarget(idKeyOrHint, config.keyPrefix)
    switch (target._tag) {
      case "IdOrHint":
        return yield* keyStore.revokeKey(target.value, at)
      case "Key": {
        const record = yield* keyStore.findKeyByHash(hashKey(target.key))
        return Option.isSome(record) && record.value.revokedAt === null
          ? yield* keyStore.revokeKey(record.value.apiKeyId, at)
          : 0
      }
      case "Shown": {
        const shown = (yield* keyStore.listKeys).filter(({ key }) =>
          key.hint.startsWith(target.start) && key.hintTail === target.tail
        )
        let revoked = 0
        for (const { key } of shown) revoked += yield* keyStore.revokeKey(key.apiKeyId, at)
        return revoked
      }
    }
  })
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

  /** Why `limits` cannot be set, if they cannot. */
  const limitsRefusal = (limits: WorkspaceLimits): InvalidRequest | undefined => {
    const { maxPriority, maxRunning } = limits
    if (maxRunning !== undefined && maxRunning !== null && !(Number.isInteger(maxRunning) && maxRunning >= 1)) {
      return new InvalidRequest({
        reason: `The most running executions must be a positive integer, not ${maxRunning}.`
      })
    }
    if (
      maxPriority !== undefined && maxPriority !== null &&
      !(Number.isInteger(maxPriority) && maxPriority >= 0 && maxPriority <= PRIORITY_MAX)
    ) {
      return new InvalidRequest({
        reason: `The highest priority must be an integer from 0 to ${PRIORITY_MAX}, not ${maxPriority}.`
      })
    }
    return undefined
  }

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
          hintTail: tailOf(key),
          createdAt: yield* now,
          revokedAt: null,
          lastUsedAt: null
        }
        yield* keyStore.insertKey(record)
        return { key, hint: shownHint(record, config.keyPrefix), record, workspace, user }
      }
    ),
    revoke: Effect.fn("Appexec.keys.revoke")((idKeyOrHint: string) => {
      const revoke = Effect.flatMap(now, (at) => revokeNamed(idKeyOrHint, at))
      // Once it committed (or failed), this turn's read of the revision is stale: the next request reads again.
      return revision === undefined ? revoke : Effect.ensuring(revoke, revision.invalidate)
    }),
    cached,
    // Every request runs it: untraced, and without a generator.
    authenticate: (headers: CredentialHeaders) => {
      const key = credentialFrom(headers)
      if (key === undefined) return Effect.fail(new Unauthorized({ reason: "missing" }))
      if (!isWellFormed(key, config.keyPrefix)) return Effect.fail(new Unauthorized({ reason: "malformed" }))
      return authenticateKey(key)
    },
    list: keyStore.listKeys.pipe(
      Effect.map((listed) =>
        listed.map(({ key, user, workspace }): ListedKey => ({
          apiKeyId: key.apiKeyId,
          hint: shownHint(key, config.keyPrefix),
          workspace,
          user,
          createdAt: key.createdAt,
          lastUsedAt: key.lastUsedAt
        }))
      ),
      Effect.withSpan("Appexec.keys.list")
    ),
    ensureWorkspace: Effect.fn("Appexec.workspaces.create")(ensureWorkspace),
    listWorkspaces: keyStore.listWorkspaces,
    setWorkspace: Effect.fn("Appexec.workspaces.set")(function*(name: string, limits: WorkspaceLimits) {
      const refusal = limitsRefusal(limits)
      if (refusal !== undefined) return yield* refusal
      const workspace = yield* keyStore.findWorkspace(name)
      if (Option.isNone(workspace)) return workspace
      yield* keyStore.setWorkspaceLimits(workspace.value.workspaceId, limits)
      ClaimPlan.changed()
      return yield* keyStore.getWorkspace(workspace.value.workspaceId)
    }),
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
