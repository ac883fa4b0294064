/**
 * The `Appexec` facade: what a host program (and the HTTP adapter) uses. It enforces the access
 * rules of docs/api.md and speaks in the resources of docs/api.md#resources.
 */
import { Api, type Authentication } from "@appexec/api"
import type { AppDetail, AppSummary, WorkflowGraph } from "@appexec/api/App"
import {
  type Execution,
  type ExecutionStatus,
  type StartedExecution,
  type WebhookDelivery
} from "@appexec/api/Execution"
import { ApiKeyId, AppId, ExecutionId, UserId, WorkspaceId } from "@appexec/api/Ids"
import { Clock, Context, Duration, Effect, Either, Layer, Metric, Option, Ref } from "effect"
import { parameterIdOf } from "./AppDefinition.js"
import { AppexecConfig, millis } from "./AppexecConfig.js"
import { executionsStarted, recordFinished } from "./AppexecMetrics.js"
import { type AppRecord, AppStore } from "./AppStore.js"
import { BlobStore } from "./BlobStore.js"
import {
  AppAccessDenied,
  AppNotFound,
  ExecutionFinished,
  ExecutionNotFound,
  IdempotencyKeyReused,
  type InvalidAppDefinition,
  type InvalidInputs,
  InvalidRequest,
  InvalidWebhookUrl,
  type StorageError,
  Unauthorized
} from "./Errors.js"
import { type Change, ExecutionEvents } from "./ExecutionEvents.js"
import { failNow, isTerminal, placeholder } from "./ExecutionLifecycle.js"
import {
  executionJson,
  type ExecutionRecord,
  type ExecutionView,
  toExecution,
  toStartedExecution,
  viewOf
} from "./ExecutionRecord.js"
import { ExecutionStore } from "./ExecutionStore.js"
import { IdGenerator } from "./IdGenerator.js"
import { isHttpUrl, validateInputs } from "./InputValidation.js"
import { credentialFrom, hashKey, hintOf, isWellFormed, KEY_RANDOM_BYTES } from "./internal/ApiKeys.js"
import { AppCatalog, type ImportOptions } from "./internal/AppCatalog.js"
import { CANCELED_MESSAGE, Cancellations } from "./internal/Cancellations.js"
import { canonicalJson, sha256Hex } from "./internal/hash.js"
import * as Retention from "./internal/Retention.js"
import { type ApiKeyRecord, KeyStore, type UserRecord, type WorkspaceRecord } from "./KeyStore.js"
import { OutboundHttp } from "./OutboundHttp.js"
import * as TraceContext from "./TraceContext.js"
import { DeliveryId, entryFor, WebhookOutbox } from "./WebhookOutbox.js"

/** Who is calling: the workspace, user and key of an authenticated request. */
export type Principal = Authentication.Principal

/** Default and bounds of the list `limit`. */
export const LIST_LIMIT = Api.LIST_LIMIT

/** Authenticated keys kept in memory (see `keys.authenticate`). */
export const KEY_CACHE_SIZE = 10_000

/**
 * The key revision `keys.revision` read: the store's (see `KeyStore.keyRevision`), or `undefined`
 * for a store that keeps none.
 */
export type KeyRevision = number | undefined

/** An `Idempotency-Key`: 1 to 255 visible ASCII characters. */
export const isIdempotencyKey = (key: string): boolean => /^[\x21-\x7e]{1,255}$/.test(key)

/** Options of a start beside the inputs. */
export interface StartOptions {
  /** Absolute http(s) URL that receives the signed result. */
  readonly webhook?: string | undefined
  /** The same key (per workspace) answers the first execution again instead of starting another. */
  readonly idempotencyKey?: string | undefined
}

/** Options of a read of an execution. */
export interface GetOptions {
  /** Hold the answer until the execution is finished or this much time has passed (long polling). */
  readonly wait?: Duration.DurationInput | undefined
  /**
   * With `wait`: whether an answer (the JSON text `getJson` writes) is the one the caller holds
   * already, as an `If-None-Match` tells. The answer is then held until the execution differs
   * from it (any change, not only its end) or `wait` has passed, and given at once when it
   * differs already or has finished.
   */
  readonly unchanged?: ((json: string) => boolean) | undefined
}

/** Why a start is refused. */
export type StartError =
  | AppNotFound
  | AppAccessDenied
  | InvalidInputs
  | InvalidRequest
  | InvalidWebhookUrl
  | IdempotencyKeyReused
  | StorageError

/** Longest accepted webhook URL. */
export const MAX_WEBHOOK_URL_LENGTH = 2048

/** An API key just created: the key itself (shown once) and its stored record. */
export interface CreatedKey {
  readonly key: string
  readonly record: ApiKeyRecord
  readonly workspace: WorkspaceRecord
  readonly user: UserRecord
}

/** `Schema.UUID`'s own pattern, tested directly: every read by id checks it first. */
const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/
const isUuid = (id: string): boolean => UUID_PATTERN.test(id)

/** The appexec service as a host program uses it. */
export class Appexec extends Context.Tag("@appexec/core/Appexec")<
  Appexec,
  {
    readonly apps: {
      /** Checks and stores an app definition (docs/apps.md); returns the app's summary. */
      readonly import: (
        definition: unknown,
        options?: ImportOptions
      ) => Effect.Effect<AppSummary, InvalidAppDefinition | InvalidRequest | StorageError>
      /** Apps the principal can run: its workspace's apps, then up to `limit` public apps (docs/api.md#list-apps). */
      readonly list: (
        principal: Principal,
        query?: { readonly search?: string | undefined; readonly limit?: number | undefined }
      ) => Effect.Effect<ReadonlyArray<AppSummary>, InvalidRequest | StorageError>
      /** Every app of the instance, for operators. */
      readonly listAll: Effect.Effect<ReadonlyArray<AppRecord>, StorageError>
      /** An app's parameters (docs/api.md#get-an-app). */
      readonly get: (
        principal: Principal,
        appId: string
      ) => Effect.Effect<AppDetail, AppNotFound | AppAccessDenied | StorageError>
      /** An app's workflow graph (docs/api.md#get-an-apps-workflow). */
      readonly workflow: (
        principal: Principal,
        appId: string
      ) => Effect.Effect<WorkflowGraph, AppNotFound | AppAccessDenied | StorageError>
    }
    readonly executions: {
      /** Validates inputs and queues an execution (docs/api.md#start-an-execution). */
      readonly start: (
        principal: Principal,
        appId: string,
        inputs: unknown,
        options?: StartOptions
      ) => Effect.Effect<StartedExecution, StartError>
      /**
       * An execution of the principal's workspace (docs/api.md#get-an-execution); another
       * workspace's is not found. With `wait`, answers when it finishes or when `wait` has passed
       * (docs/api.md#long-polling).
       */
      readonly get: (
        principal: Principal,
        executionId: string,
        options?: GetOptions
      ) => Effect.Effect<Execution, ExecutionNotFound | StorageError>
      /**
       * `get`, answered as the JSON text of the `Execution` (what its schema encodes), written
       * from the stored columns without building the record: the read behind every poll.
       */
      readonly getJson: (
        principal: Principal,
        executionId: string,
        options?: GetOptions
      ) => Effect.Effect<string, ExecutionNotFound | StorageError>
      /**
       * How the delivery of the webhook of an execution of the principal's workspace goes; none
       * when it has no webhook (docs/webhooks.md#failed-deliveries).
       */
      readonly webhook: (
        principal: Principal,
        executionId: string
      ) => Effect.Effect<WebhookDelivery | null, ExecutionNotFound | StorageError>
      /**
       * Cancels an execution (docs/api.md#cancel-an-execution): a queued one fails at once, a
       * running one is interrupted where it runs, in this process or another, and fails. Without a
       * principal (an operator), any workspace's execution.
       */
      readonly cancel: (
        executionId: string,
        principal?: Principal
      ) => Effect.Effect<Execution, ExecutionNotFound | ExecutionFinished | StorageError>
      /** Waits in-process until the execution is completed or failed, and returns it. */
      readonly await: (executionId: string) => Effect.Effect<Execution, ExecutionNotFound | StorageError>
    }
    readonly keys: {
      /** Creates an API key for a user of a workspace, creating both by name when missing. */
      readonly create: (options: {
        readonly workspace: string
        readonly user?: string | undefined
      }) => Effect.Effect<CreatedKey, StorageError>
      /** Revokes keys by id or hint; returns how many were revoked. */
      readonly revoke: (idOrHint: string) => Effect.Effect<number, StorageError>
      /**
       * The principal of a request's credential (`x-api-key` or `Authorization: Bearer`). A key
       * is checked against the store's key revision as it is now, so that a revocation by any
       * process counts at once; `revision`, when given, stands for that read. It must come from
       * `keys.revision` read after the request arrived (the Node listener reads it once for the
       * requests of an event-loop turn).
       */
      readonly authenticate: (
        headers: {
          readonly "x-api-key"?: string | undefined
          readonly authorization?: string | undefined
        },
        revision?: KeyRevision
      ) => Effect.Effect<Principal, Unauthorized | StorageError>
      /** The store's key revision now, for `authenticate` of requests that arrived before this read. */
      readonly revision: Effect.Effect<KeyRevision, StorageError>
    }
    readonly workspaces: {
      /** Creates a workspace, or returns the one with that name. */
      readonly create: (name: string) => Effect.Effect<WorkspaceRecord, StorageError>
    }
    /** For operators: readiness, executions across workspaces, retention (docs/operations.md). */
    readonly operator: {
      /** Ready for traffic: storage answers (within 2 s) and the instance is not draining; else why not. */
      readonly ready: Effect.Effect<Option.Option<string>>
      /** Marks the instance as draining (shutting down): `ready` answers so from now on. */
      readonly drain: Effect.Effect<void>
      /** Executions newest first, of one workspace (by name) and status if given; `limit` 1–1000 (default 50). */
      readonly listExecutions: (filter?: ExecutionFilter) => Effect.Effect<
        ReadonlyArray<ExecutionRecord>,
        InvalidRequest | StorageError
      >
      /**
       * Deletes finished executions completed longer than the retention ago (or `olderThan`), with
       * their webhook deliveries and media; answers how many were deleted.
       */
      readonly prune: (options?: {
        readonly olderThan?: Duration.DurationInput | undefined
      }) => Effect.Effect<number, StorageError>
    }
  }
>() {}

/** Which executions `operator.listExecutions` answers. */
export interface ExecutionFilter {
  /** Workspace name. */
  readonly workspace?: string | undefined
  readonly status?: ExecutionStatus | undefined
  readonly limit?: number | undefined
}

/** Default and bounds of `operator.listExecutions`'s limit. */
export const OPERATOR_LIST_LIMIT = { default: 50, min: 1, max: 1000 } as const

const summaryOf = (app: AppRecord): AppSummary => ({
  appId: app.appId,
  name: app.name,
  description: app.description,
  isPublic: app.isPublic
})

/** The facade over the ports, catalog and events. */
export const layer = Layer.scoped(
  Appexec,
  Effect.gen(function*() {
    const config = yield* AppexecConfig
    const appStore = yield* AppStore
    const executionStore = yield* ExecutionStore
    const keyStore = yield* KeyStore
    const catalog = yield* AppCatalog
    const events = yield* ExecutionEvents
    const ids = yield* IdGenerator
    const blobs = yield* BlobStore
    const cancellations = yield* Cancellations
    // Only to refuse at start a webhook URL the client would surely refuse at delivery.
    const outbound = yield* Effect.serviceOption(OutboundHttp)
    const outbox = yield* WebhookOutbox
    const now = Effect.clockWith((clock) => clock.currentTimeMillis)
    const draining = yield* Ref.make(false)
    const traced = yield* TraceContext.spansExported

    /**
     * Keys that authenticated, by the key as presented, while the store's key revision stays
     * where it was when they were cached: any revocation moves the revision and empties the
     * cache, so a revoked key is refused at its next request, also when another process revoked
     * it. Keyed by the key itself rather than its hash, so that a hit costs no hashing; the same
     * string is in every request that presents it. At most `KEY_CACHE_SIZE` keys, the least
     * recently used dropped first; unknown keys are never cached. A revision a caller read for a
     * batch of requests (`authenticate`'s second argument) may be older than one read since: it
     * empties the cache as any other change of revision does, and what is cached under it was
     * looked up in the store after that read, so no key revoked before a request's read passes.
     */
    const keyCache = new Map<string, Principal>()
    let cachedRevision: number | undefined
    const keyRevision = keyStore.keyRevision

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

    const authenticateKey = (
      key: string,
      revision: KeyRevision
    ): Effect.Effect<Principal, Unauthorized | StorageError> =>
      keyRevision === undefined
        ? lookUpKey(key)
        : revision !== undefined
        ? authenticateAt(key, revision)
        : Effect.flatMap(keyRevision, (now) => authenticateAt(key, now))
    const readRevision: Effect.Effect<KeyRevision, StorageError> = keyRevision ?? Effect.succeed(undefined)

    /** The app, if the principal may see it: own or public; another workspace's private app is denied. */
    // Every start reads one: no generator.
    const visibleApp = (
      principal: Principal,
      appId: string
    ): Effect.Effect<AppRecord, AppNotFound | AppAccessDenied | StorageError> => {
      if (!isUuid(appId)) return Effect.fail(new AppNotFound({ appId }))
      return Effect.flatMap(appStore.get(AppId.make(appId, { disableValidation: true })), (
        app
      ): Effect.Effect<AppRecord, AppNotFound | AppAccessDenied> => {
        if (Option.isNone(app)) return Effect.fail(new AppNotFound({ appId }))
        if (!app.value.isPublic && app.value.workspaceId !== principal.workspaceId) {
          return Effect.fail(new AppAccessDenied({ appId }))
        }
        return Effect.succeed(app.value)
      })
    }

    /** A visible app with its compiled current workflow. */
    const visibleWorkflow = (principal: Principal, appId: string) =>
      Effect.flatMap(
        visibleApp(principal, appId),
        (app) => Effect.map(catalog.load(app.workflowId), ({ app: compiled }) => ({ app, compiled }))
      )

    const visibleExecution = (
      executionId: string,
      principal?: Principal
    ): Effect.Effect<ExecutionRecord, ExecutionNotFound | StorageError> => {
      if (!isUuid(executionId)) return Effect.fail(new ExecutionNotFound({ executionId }))
      // Checked just above: the id is a UUID.
      const id = ExecutionId.make(executionId, { disableValidation: true })
      return Effect.flatMap(
        executionStore.get(id),
        (record) =>
          Option.isNone(record) || (principal !== undefined && record.value.workspaceId !== principal.workspaceId)
            ? Effect.fail(new ExecutionNotFound({ executionId }))
            : Effect.succeed(record.value)
      )
    }

    /** Why a webhook URL is refused at start, if it is. */
    const webhookRefusal = (webhook: string): InvalidWebhookUrl | undefined => {
      if (webhook.length > MAX_WEBHOOK_URL_LENGTH) {
        return new InvalidWebhookUrl({
          url: webhook.slice(0, 64),
          reason: `longer than ${MAX_WEBHOOK_URL_LENGTH} characters`
        })
      }
      if (!isHttpUrl(webhook)) {
        return new InvalidWebhookUrl({ url: webhook, reason: "it must be an absolute http or https URL" })
      }
      const refused = Option.flatMap(outbound, (http) => http.refusal?.(webhook) ?? Option.none())
      return Option.isSome(refused)
        ? new InvalidWebhookUrl({ url: webhook, reason: refused.value.message.replace(/\.$/, "") })
        : undefined
    }

    /** A start with an idempotency key: inserted once, or the first start's answer replayed. */
    const startIdempotent = Effect.fnUntraced(function*(
      principal: Principal,
      appId: string,
      inputs: unknown,
      webhook: string | undefined,
      idempotencyKey: string,
      record: ExecutionRecord,
      stored: ExecutionRecord
    ) {
      // The request as sent: a replay must name the same app, inputs and webhook.
      const fingerprint = sha256Hex(canonicalJson({ appId, inputs, webhook: webhook ?? null }))
      const at = yield* now
      const inserted = yield* executionStore.insertIdempotent(stored, {
        workspaceId: principal.workspaceId,
        key: idempotencyKey,
        fingerprint,
        expiresAt: at + millis(config.idempotencyKeyTtl)
      }, at)
      if (inserted._tag === "Inserted") {
        yield* Metric.increment(executionsStarted)
        yield* events.publish(record)
        return toStartedExecution(record)
      }
      if (inserted.fingerprint !== fingerprint) {
        return yield* new IdempotencyKeyReused({ key: idempotencyKey, executionId: inserted.executionId })
      }
      const first = yield* executionStore.get(inserted.executionId)
      return yield* Option.match(first, {
        // The first execution was deleted (retention) while its key lived on: nothing to replay.
        onNone: () => new IdempotencyKeyReused({ key: idempotencyKey, executionId: inserted.executionId }),
        // The same body as the first answer: outputs as placeholders, whatever has happened since.
        onSome: (found) =>
          Effect.succeed({
            ...toStartedExecution(found),
            outputs: found.outputs.map((o) => placeholder(o.id, o.label))
          })
      })
    })

    /**
     * Validates a start and queues its execution: answered once the execution is committed.
     * Every start runs it: no generator on the common path (no idempotency key).
     */
    const startExecution = (
      principal: Principal,
      appId: string,
      inputs: unknown,
      options: StartOptions = {}
    ): Effect.Effect<StartedExecution, StartError> => {
      const idempotencyKey = options.idempotencyKey
      if (idempotencyKey !== undefined && !isIdempotencyKey(idempotencyKey)) {
        return Effect.fail(
          new InvalidRequest({ reason: "The Idempotency-Key header must be 1 to 255 visible ASCII characters." })
        )
      }
      const webhook = options.webhook
      return Effect.flatMap(visibleWorkflow(principal, appId), ({ app, compiled }): Effect.Effect<
        StartedExecution,
        StartError
      > => {
        const refusal = webhook === undefined ? undefined : webhookRefusal(webhook)
        if (refusal !== undefined) return Effect.fail(refusal)
        const resolved = validateInputs(compiled.parameters, inputs)
        if (Either.isLeft(resolved)) return Effect.fail(resolved.left)
        return Effect.flatMap(ids.uuid, (executionId) =>
          Effect.flatMap(now, (createdAt) =>
            // The trace this request is part of: the run and the webhook attempts continue it.
            Effect.flatMap(TraceContext.current, (traceParent) => {
              const record: ExecutionRecord = {
                executionId: ExecutionId.make(executionId),
                workflowId: app.workflowId,
                appId: app.appId,
                workspaceId: principal.workspaceId,
                userId: principal.userId,
                status: "queued",
                inputs: resolved.right,
                outputs: compiled.outputs.map((o) => placeholder(o.id, o.label)),
                errorMessage: null,
                webhookUrl: webhook ?? null,
                createdAt,
                startedAt: null,
                completedAt: null
              }
              const stored = traceParent === undefined ? record : { ...record, traceParent }
              if (idempotencyKey !== undefined) {
                return startIdempotent(principal, appId, inputs, webhook, idempotencyKey, record, stored)
              }
              return Effect.as(
                Effect.zipRight(
                  executionStore.insert(stored),
                  Effect.zipRight(Metric.increment(executionsStarted), events.publish(record))
                ),
                toStartedExecution(record)
              )
            })))
      })
    }

    const recordJson = (record: ExecutionRecord) => executionJson(viewOf(record))

    const waitForEnd = (executionId: string): Effect.Effect<ExecutionRecord, ExecutionNotFound | StorageError> =>
      Effect.uninterruptibleMask((restore) => {
        if (!isUuid(executionId)) return Effect.fail(new ExecutionNotFound({ executionId }))
        // Registered before reading, so a transition between the read and the wait is not missed;
        // removed however the wait ends (many may wait at once: no scope per wait).
        const id = ExecutionId.make(executionId, { disableValidation: true })
        const waiting = events.unsafeAwaitTerminal(id)
        // The first look reads the view (no JSON decoded): the record is read only when it has
        // already ended; otherwise its terminal record comes with the wake-up.
        return restore(
          Effect.flatMap(executionStore.getView(id), (view) =>
            Option.isNone(view)
              ? Effect.fail(new ExecutionNotFound({ executionId }))
              : isTerminal(view.value.status)
              ? visibleExecution(executionId)
              : waiting.wait)
        ).pipe(Effect.ensuring(Effect.sync(waiting.release)))
      })

    /**
     * The view of an execution of the principal's workspace once it is not `unchanged`: at once
     * when it differs already or has finished, else at its first change; with the latest view
     * read when `wait` passes first.
     */
    const waitForChange = (
      principal: Principal,
      executionId: string,
      wait: Duration.DurationInput,
      unchanged: (json: string) => boolean
    ): Effect.Effect<ExecutionView, ExecutionNotFound | StorageError> =>
      Effect.uninterruptibleMask((restore) => {
        if (!isUuid(executionId)) return Effect.fail(new ExecutionNotFound({ executionId }))
        const id = ExecutionId.make(executionId, { disableValidation: true })
        // Registered before the first read, and each change's successor taken before the read it
        // causes: a change made while the store is read is never missed.
        const watching = events.unsafeAwaitChange(id)
        const read = Effect.flatMap(executionStore.getView(id), (view) =>
          Option.isNone(view) || view.value.workspaceId !== principal.workspaceId
            ? Effect.fail(new ExecutionNotFound({ executionId }))
            : Effect.succeed(view.value))
        let latest: ExecutionView | undefined
        const look = (next: Effect.Effect<Change>): Effect.Effect<ExecutionView, ExecutionNotFound | StorageError> =>
          Effect.flatMap(read, (view) => {
            latest = view
            return !unchanged(executionJson(view)) || isTerminal(view.status)
              ? Effect.succeed(view)
              : Effect.flatMap(next, (change) =>
                look(change.next))
          })
        return restore(
          Effect.flatMap(Effect.timeoutOption(look(watching.next), wait), (changed) =>
            Option.match(changed, {
              // Unchanged for all of `wait`: answered as last read (read now if no read ended in time).
              onNone: () =>
                latest === undefined ? read : Effect.succeed(latest),
              onSome: Effect.succeed
            }))
        ).pipe(Effect.ensuring(Effect.sync(watching.release)))
      })

    /** The view of each watched execution as the last look at the store saw it, as JSON, by id. */
    let lastSeen: ReadonlyMap<string, string> = new Map()

    // Executions run by other processes on the same store end (or change) without an event here:
    // one look at the store per interval covers every waiter at once.
    const lookAtStore = Effect.gen(function*() {
      const waited = yield* events.waited
      if (waited.length > 0) {
        const finished = yield* executionStore.finishedAmong(waited)
        for (const executionId of finished) {
          const record = yield* executionStore.get(executionId)
          if (Option.isSome(record)) yield* events.settle(record.value)
        }
      }
      const watched = yield* events.watched
      const views = watched.length === 0 ? [] : yield* executionStore.viewsAmong(watched)
      const seen = new Map(views.map((view) => [view.executionId, executionJson(view)]))
      // A view the last look did not see may be news to a waiter too: its waiters read the store
      // again, and only those it differs for answer.
      for (const [executionId, json] of seen) {
        if (lastSeen.get(executionId) !== json) {
          yield* events.changed(ExecutionId.make(executionId, { disableValidation: true }))
        }
      }
      lastSeen = seen
    }).pipe(Effect.catchAll((error) => Effect.logWarning("looking for changed executions failed", error)))
    yield* lookAtStore.pipe(
      Effect.delay(Duration.millis(Math.max(millis(config.pollInterval), 1000))),
      Effect.forever,
      Effect.forkScoped
    )

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

    return {
      apps: {
        import: Effect.fn("Appexec.apps.import")((definition: unknown, options?: ImportOptions) =>
          Effect.map(catalog.import(definition, options), summaryOf)
        ),
        // Hot paths (every listing, every app read): untraced.
        list: Effect.fnUntraced(function*(
          principal: Principal,
          query: { readonly search?: string | undefined; readonly limit?: number | undefined } = {}
        ) {
          const limit = query.limit ?? LIST_LIMIT.default
          if (!Number.isInteger(limit) || limit < LIST_LIMIT.min || limit > LIST_LIMIT.max) {
            return yield* new InvalidRequest({
              reason: `\`limit\` must be an integer from ${LIST_LIMIT.min} to ${LIST_LIMIT.max}.`
            })
          }
          const search = query.search?.trim()
          const listing = yield* appStore.list({
            workspaceId: principal.workspaceId,
            search: search === "" ? undefined : search,
            publicLimit: limit
          })
          return [...listing.workspace, ...listing.public].map(summaryOf)
        }),
        listAll: appStore.listAll,
        get: Effect.fnUntraced(function*(principal: Principal, appId: string) {
          const { app, compiled } = yield* visibleWorkflow(principal, appId)
          return {
            appId: app.appId,
            name: app.name,
            description: app.description ?? "",
            parameters: compiled.parameters.map((p) => ({
              id: parameterIdOf(app.appId, p.nodeId),
              name: p.name,
              type: p.type,
              required: p.required,
              ...(p.accept === undefined ? {} : { accept: p.accept }),
              ...(p.options === undefined ? {} : { options: p.options }),
              ...(p.default === undefined ? {} : { default: p.default }),
              ...(p.label === undefined ? {} : { label: p.label }),
              ...(p.description === undefined ? {} : { description: p.description })
            }))
          }
        }),
        workflow: Effect.fn("Appexec.apps.workflow")(function*(principal: Principal, appId: string) {
          const { app, compiled } = yield* visibleWorkflow(principal, appId)
          return {
            appId: app.appId,
            name: app.name,
            nodes: compiled.definition.nodes.map((n) => ({ id: n.id, type: n.type, label: n.label ?? n.id })),
            edges: compiled.edges
          }
        })
      },
      executions: {
        // A span only when spans go somewhere: the default tracer keeps them to itself.
        start: traced
          ? (principal: Principal, appId: string, inputs: unknown, options: StartOptions = {}) =>
            Effect.withSpan(startExecution(principal, appId, inputs, options), "Appexec.executions.start")
          : startExecution,
        // The request clients poll: untraced, and without a generator.
        get: (principal: Principal, executionId: string, options: GetOptions = {}) =>
          options.wait !== undefined && options.unchanged !== undefined
            ? Effect.zipRight(
              waitForChange(principal, executionId, options.wait, options.unchanged),
              Effect.map(visibleExecution(executionId, principal), toExecution)
            )
            : Effect.flatMap(
              visibleExecution(executionId, principal),
              (record) =>
                options.wait === undefined || isTerminal(record.status)
                  ? Effect.succeed(toExecution(record))
                  : Effect.map(
                    waitForEnd(executionId).pipe(Effect.timeoutOption(options.wait)),
                    (waited) => toExecution(Option.getOrElse(waited, () => record))
                  )
            ),
        getJson: (principal: Principal, executionId: string, options: GetOptions = {}) => {
          if (options.wait !== undefined && options.unchanged !== undefined) {
            return Effect.map(waitForChange(principal, executionId, options.wait, options.unchanged), executionJson)
          }
          if (!isUuid(executionId)) return Effect.fail(new ExecutionNotFound({ executionId }))
          return Effect.flatMap(
            executionStore.getView(ExecutionId.make(executionId, { disableValidation: true })),
            (view): Effect.Effect<string, ExecutionNotFound | StorageError> => {
              if (Option.isNone(view) || view.value.workspaceId !== principal.workspaceId) {
                return Effect.fail(new ExecutionNotFound({ executionId }))
              }
              if (options.wait === undefined || isTerminal(view.value.status)) {
                return Effect.succeed(executionJson(view.value))
              }
              const first = view.value
              return Effect.map(
                waitForEnd(executionId).pipe(Effect.timeoutOption(options.wait)),
                (waited) => Option.match(waited, { onNone: () => executionJson(first), onSome: recordJson })
              )
            }
          )
        },
        cancel: Effect.fn("Appexec.executions.cancel")(function*(executionId: string, principal?: Principal) {
          for (;;) {
            const record = yield* visibleExecution(executionId, principal)
            if (isTerminal(record.status)) {
              return yield* new ExecutionFinished({ executionId: record.executionId, status: record.status })
            }
            const at = yield* now
            if (record.status === "queued") {
              // No worker holds it: fail it here, with its webhook, in one write.
              const loaded = yield* catalog.load(record.workflowId).pipe(Effect.option)
              const outputTypes = Option.match(loaded, {
                onNone: () => ({}),
                onSome: ({ app }) => Object.fromEntries(app.outputs.map((o) => [o.id, o.type]))
              })
              const failed = yield* Either.match(failNow(record, at, CANCELED_MESSAGE, outputTypes), {
                onLeft: Effect.die,
                onRight: Effect.succeed
              })
              const outbox = entryFor(failed, DeliveryId.make(yield* ids.uuid), at, failed.traceParent)
              if (yield* executionStore.cancelQueued(failed, at, outbox)) {
                yield* recordFinished(failed)
                yield* events.publish(failed)
                return toExecution(failed)
              }
            }
            // A worker holds it: it is told through the store (any process) and, here, at once.
            if (yield* executionStore.requestCancel(record.executionId, at)) {
              yield* cancellations.signal(record.executionId)
              return toExecution(record)
            }
            // It finished meanwhile: read it again, to answer as it is now.
          }
        }),
        webhook: Effect.fn("Appexec.executions.webhook")(function*(principal: Principal, executionId: string) {
          const record = yield* visibleExecution(executionId, principal)
          if (record.webhookUrl === null) return null
          // The newest entry: one per execution (written with the terminal transition), none before it.
          const entry = (yield* outbox.forExecution(record.executionId)).at(-1)
          const delivery: WebhookDelivery = {
            url: record.webhookUrl,
            status: entry?.status ?? "pending",
            attempts: (entry?.attempts ?? []).map((a) => ({
              at: new Date(a.at),
              statusCode: a.statusCode,
              error: a.error
            }))
          }
          return delivery
        }),
        await: traced
          ? Effect.fn("Appexec.executions.await")((executionId: string) =>
            Effect.map(waitForEnd(executionId), toExecution)
          )
          // Untraced, a wait is only its registration: many may wait at once.
          : (executionId: string) => Effect.map(waitForEnd(executionId), toExecution)
      },
      keys: {
        create: Effect.fn("Appexec.keys.create")(
          function*(options: { readonly workspace: string; readonly user?: string | undefined }) {
            const workspace = yield* ensureWorkspace(options.workspace)
            const user = yield* keyStore.ensureUser({
              userId: UserId.make(yield* ids.uuid),
              workspaceId: workspace.workspaceId,
              name: options.user ?? "default",
              createdAt: yield* now
            })
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
        revoke: Effect.fn("Appexec.keys.revoke")((idOrHint: string) =>
          Effect.flatMap(now, (at) => keyStore.revokeKey(idOrHint, at))
        ),
        // Every request runs it: untraced, and without a generator.
        authenticate: (
          headers: {
            readonly "x-api-key"?: string | undefined
            readonly authorization?: string | undefined
          },
          revision?: KeyRevision
        ) => {
          const key = credentialFrom(headers)
          if (key === undefined) return Effect.fail(new Unauthorized({ reason: "missing" }))
          if (!isWellFormed(key, config.keyPrefix)) return Effect.fail(new Unauthorized({ reason: "malformed" }))
          return authenticateKey(key, revision)
        },
        revision: readRevision
      },
      workspaces: { create: Effect.fn("Appexec.workspaces.create")(ensureWorkspace) },
      operator: {
        ready: Effect.gen(function*() {
          if (yield* Ref.get(draining)) return Option.some("draining")
          const probe = yield* executionStore.countOpen.pipe(Effect.timeoutOption("2 seconds"), Effect.either)
          if (probe._tag === "Left") return Option.some("storage unavailable")
          return Option.isNone(probe.right) ? Option.some("storage did not answer within 2 s") : Option.none()
        }),
        drain: Ref.set(draining, true),
        listExecutions: Effect.fn("Appexec.operator.listExecutions")(function*(filter: ExecutionFilter = {}) {
          const limit = filter.limit ?? OPERATOR_LIST_LIMIT.default
          if (!Number.isInteger(limit) || limit < OPERATOR_LIST_LIMIT.min || limit > OPERATOR_LIST_LIMIT.max) {
            return yield* new InvalidRequest({
              reason: `\`limit\` must be an integer from ${OPERATOR_LIST_LIMIT.min} to ${OPERATOR_LIST_LIMIT.max}.`
            })
          }
          let workspaceId: WorkspaceId | undefined
          if (filter.workspace !== undefined) {
            const workspace = yield* keyStore.findWorkspace(filter.workspace)
            if (Option.isNone(workspace)) {
              return yield* new InvalidRequest({ reason: `No workspace is named '${filter.workspace}'.` })
            }
            workspaceId = workspace.value.workspaceId
          }
          return yield* executionStore.list({ limit, status: filter.status, workspaceId })
        }),
        prune: Effect.fn("Appexec.operator.prune")(function*(
          options: { readonly olderThan?: Duration.DurationInput | undefined } = {}
        ) {
          const retention = options.olderThan === undefined ? config.retention : Duration.decode(options.olderThan)
          const cutoff = (yield* Clock.currentTimeMillis) - Duration.toMillis(retention)
          return yield* Retention.pruneBefore(cutoff).pipe(
            Effect.provideService(ExecutionStore, executionStore),
            Effect.provideService(BlobStore, blobs)
          )
        })
      }
    }
  })
)
