/**
 * The `Appexec` facade: what a host program (and the HTTP adapter) uses. It enforces the access
 * rules of docs/api.md and speaks in the resources of docs/api.md#resources. Each part is a module
 * of its own under `internal/`: `Keys` (keys, workspaces, authentication with its key revision
 * memo), `Starts`, `Waits` (reads that wait), `ExecutionPages` (the list), `Apps`, `Uploads`,
 * `OperatorActions` (cancels, webhook deliveries and redeliveries, operators); `Visibility` holds
 * the reads by id they share.
 */
import type { Authentication } from "@appexec/api"
import type { AppDetail, AppSummary, WorkflowGraph } from "@appexec/api/App"
import type { Execution, ExecutionPage, StartedExecution, WebhookDelivery } from "@appexec/api/Execution"
import type { LogLine } from "@appexec/api/Live"
import type { Upload } from "@appexec/api/Upload"
import { Context, type Duration, Effect, Layer, type Option, type Stream } from "effect"
import type { AppRecord } from "./AppStore.js"
import type * as CountedStarts from "./CountedStarts.js"
import type {
  AppAccessDenied,
  AppNotFound,
  ExecutionFinished,
  ExecutionNotFound,
  InvalidAppDefinition,
  InvalidRequest,
  StorageError,
  Unauthorized,
  WebhookNotRedeliverable
} from "./Errors.js"
import type { ExecutionRecord } from "./ExecutionRecord.js"
import type { ImportOptions } from "./internal/facade/AppCatalog.js"
import * as Apps from "./internal/facade/Apps.js"
import * as ExecutionPages from "./internal/facade/ExecutionPages.js"
import type { ExecutionQuery } from "./internal/facade/ExecutionPages.js"
import * as Keys from "./internal/facade/Keys.js"
import type { CreatedKey, CredentialHeaders, ListedKey } from "./internal/facade/Keys.js"
import * as LiveStreams from "./internal/facade/LiveStreams.js"
import type { Follower, LiveEvent } from "./internal/facade/LiveStreams.js"
import * as OperatorActions from "./internal/facade/OperatorActions.js"
import type { ExecutionFilter } from "./internal/facade/OperatorActions.js"
import * as Starts from "./internal/facade/Starts.js"
import type { StartError, StartOptions } from "./internal/facade/Starts.js"
import * as Uploads from "./internal/facade/Uploads.js"
import type { NewUpload, UploadError } from "./internal/facade/Uploads.js"
import * as Visibility from "./internal/facade/Visibility.js"
import * as WaitingFor from "./internal/facade/WaitingFor.js"
import * as Waits from "./internal/facade/Waits.js"
import type { GetOptions } from "./internal/facade/Waits.js"
import type { WorkspaceLimits, WorkspaceRecord } from "./KeyStore.js"

export { LIST_LIMIT } from "./internal/facade/Apps.js"
export { EXECUTION_LIST_LIMIT, type ExecutionQuery } from "./internal/facade/ExecutionPages.js"
export {
  type CreatedKey,
  type CredentialHeaders,
  IN_PROCESS_KEY_ID,
  KEY_CACHE_SIZE,
  KEY_USE_RESOLUTION,
  type ListedKey
} from "./internal/facade/Keys.js"
export type { Follower, LiveEvent } from "./internal/facade/LiveStreams.js"
export { type ExecutionFilter, OPERATOR_LIST_LIMIT } from "./internal/facade/OperatorActions.js"
export {
  isIdempotencyKey,
  MAX_WEBHOOK_URL_LENGTH,
  type StartError,
  type StartOptions
} from "./internal/facade/Starts.js"
export type { NewUpload, UploadError } from "./internal/facade/Uploads.js"
export type { GetOptions } from "./internal/facade/Waits.js"

/** Who is calling: the workspace, user and key of an authenticated request. */
export type Principal = Authentication.Principal

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
       * `start` without an idempotency key, its rate-limit hit counted by the statement that
       * inserts it, its principal from the key cache (`keys.cached`) and its app from the app
       * cache: one statement in all (docs/storage.md#starts-on-postgresql). Answers none when it
       * inserted nothing; `counting.decision` then says whether the hit was counted (refused by
       * the limit, or the key or app changed meanwhile: authenticate and `start` again, without a
       * second hit) or not (no statement ran: count the hit and start as usual). Present only
       * when the storage counts starts (`CountedStarts`).
       */
      readonly startCounted?:
        | ((
          principal: Principal,
          appId: string,
          inputs: unknown,
          options: StartOptions,
          counting: CountedStarts.Counting
        ) => Effect.Effect<StartedExecution | undefined, StartError>)
        | undefined
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
       * The executions of the principal's workspace, newest first, a page at a time
       * (docs/api.md#list-executions): filtered by `status` and `appId`, `limit` per page (1–100,
       * default 20), from the page `cursor` names (the `nextCursor` of the page before).
       */
      readonly list: (
        principal: Principal,
        query?: ExecutionQuery
      ) => Effect.Effect<ExecutionPage, InvalidRequest | StorageError>
      /**
       * How the delivery of the webhook of an execution of the principal's workspace goes; none
       * when it has no webhook (docs/webhooks.md#failed-deliveries).
       */
      readonly webhook: (
        principal: Principal,
        executionId: string
      ) => Effect.Effect<WebhookDelivery | null, ExecutionNotFound | StorageError>
      /**
       * Sends the webhook of a finished execution once more (docs/api.md#redeliver-a-webhook): its
       * delivery is armed for one attempt, signed when the dispatcher sends it, after which it is
       * over whatever the outcome; answers the delivery as armed (`pending`, its attempts so far).
       * With `deliveryId`, that event's delivery (docs/webhooks.md#events), finished or not.
       * Refused when the execution has no webhook, has not finished (without `deliveryId`), has no
       * such delivery, or the delivery is under way. Without a principal (an operator), any
       * workspace's execution.
       */
      readonly redeliver: (
        executionId: string,
        principal?: Principal,
        deliveryId?: string
      ) => Effect.Effect<WebhookDelivery, ExecutionNotFound | WebhookNotRedeliverable | StorageError>
      /**
       * Cancels an execution (docs/api.md#cancel-an-execution): a queued one fails at once, a
       * running one is interrupted where it runs, in this process or another, and fails. Without a
       * principal (an operator), any workspace's execution.
       */
      readonly cancel: (
        executionId: string,
        principal?: Principal
      ) => Effect.Effect<Execution, ExecutionNotFound | ExecutionFinished | StorageError>
      /**
       * The live events of an execution of the principal's workspace (docs/api.md#live-executions):
       * first its `execution` snapshot, then every change of it, its nodes' `progress` and `log`
       * lines as they are stored, each with an increasing id; the stream ends after the terminal
       * snapshot. With `lastEventId` (a `Last-Event-ID`), it resumes after that event, or starts
       * afresh when that point is no longer kept. Fails at once when the execution is not found.
       */
      readonly events: (
        principal: Principal,
        executionId: string,
        options?: { readonly lastEventId?: string | undefined }
      ) => Effect.Effect<Stream.Stream<LiveEvent, StorageError>, ExecutionNotFound | StorageError>
      /**
       * `events` as a `Follower`: the same events, read when asked, for a transport that keeps
       * many streams open (an HTTP server): no fiber or stream per follower. `close` it when done.
       */
      readonly follow: (
        principal: Principal,
        executionId: string,
        options?: { readonly lastEventId?: string | undefined }
      ) => Effect.Effect<Follower, ExecutionNotFound | StorageError>
      /** The kept log lines of an execution of the principal's workspace, oldest first. */
      readonly logs: (
        principal: Principal,
        executionId: string
      ) => Effect.Effect<ReadonlyArray<LogLine>, ExecutionNotFound | StorageError>
      /** Waits in-process until the execution is completed or failed, and returns it. */
      readonly await: (executionId: string) => Effect.Effect<Execution, ExecutionNotFound | StorageError>
    }
    readonly keys: {
      /** Creates an API key for a user of a workspace, creating both by name when missing. */
      readonly create: (options: {
        readonly workspace: string
        readonly user?: string | undefined
      }) => Effect.Effect<CreatedKey, StorageError>
      /**
       * Revokes keys by id, by the whole key, or by hint: as listings and the console show it
       * (`aex_Twbo…myLI`) or as stored (`aex_Twbo12`); returns how many were revoked.
       */
      readonly revoke: (idKeyOrHint: string) => Effect.Effect<number, StorageError>
      /** The keys not revoked, oldest first, each with its hint as shown (`aex_Twbo…myLI`), workspace and user. */
      readonly list: Effect.Effect<ReadonlyArray<ListedKey>, StorageError>
      /**
       * The principal of a request's credential (`x-api-key` or `Authorization: Bearer`). A key
       * is checked against the store's key revision as read after this call began, so that a
       * revocation that committed before it (in any process) refuses the key; calls made
       * together share one read.
       */
      readonly authenticate: (headers: CredentialHeaders) => Effect.Effect<Principal, Unauthorized | StorageError>
      /**
       * The principal of a credential as the key cache holds it, with the key revision it was
       * cached under, reading nothing (for `executions.startCounted`); none when it is not cached.
       */
      readonly cached: (
        headers: CredentialHeaders
      ) => { readonly principal: Principal; readonly revision: number } | undefined
    }
    readonly uploads: {
      /**
       * Stores a file of the principal's workspace (docs/api.md#uploads): its bytes must be of the
       * supported type it declares (else `UnsupportedMedia`); answers a signed media URL of the
       * instance, which any `url` input reads from the blob store until it expires. Needs the
       * instance's signed `MediaUrls` in the context the facade was built in (else
       * `UploadsUnavailable`); the size bound is the caller's (the HTTP app's `maxUploadBytes`).
       */
      readonly create: (principal: Principal, upload: NewUpload) => Effect.Effect<Upload, UploadError>
    }
    readonly workspaces: {
      /** Creates a workspace, or returns the one with that name. */
      readonly create: (name: string) => Effect.Effect<WorkspaceRecord, StorageError>
      /** Every workspace, oldest first. */
      readonly list: Effect.Effect<ReadonlyArray<WorkspaceRecord>, StorageError>
      /**
       * Sets the limits of the workspace with this name (docs/scaling.md#limits): `maxRunning` a
       * positive integer, `maxPriority` an integer from 0 to `PRIORITY_MAX` (else
       * `InvalidRequest`); a limit left out stays as it is, null puts back the default. The
       * workspace as it now is; none when no workspace has that name.
       */
      readonly set: (
        name: string,
        limits: WorkspaceLimits
      ) => Effect.Effect<Option.Option<WorkspaceRecord>, InvalidRequest | StorageError>
      /**
       * The principal of a host acting in-process as a user (default `default`) of a workspace,
       * both created by name when missing, without an API key: its `apiKeyId` is
       * `IN_PROCESS_KEY_ID`, which no stored key has. No key row is written.
       */
      readonly principal: (options: {
        readonly workspace: string
        readonly user?: string | undefined
      }) => Effect.Effect<Principal, StorageError>
    }
    /** For operators: readiness, executions across workspaces, retention (docs/operations.md). */
    readonly operator: {
      /** Ready for traffic: storage answers (within 2 s) and the instance is not draining; else why not. */
      readonly ready: Effect.Effect<Option.Option<string>>
      /**
       * Marks the instance as draining (shutting down, `Shutdown.begin`): `ready` answers so from now
       * on, and a run whose workflow fails from now on is handed back rather than failed.
       */
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

/** The facade over the ports, catalog and events: its parts, composed. */
export const layer = Layer.scoped(
  Appexec,
  Effect.gen(function*() {
    const visibility = yield* Visibility.make
    const keys = yield* Keys.make
    const starts = yield* Starts.make(visibility)
    // One for the poll answers and the streams: its reads are kept once for both.
    const waitingFor = yield* WaitingFor.makeWithLimits
    const waits = yield* Waits.make(visibility, waitingFor)
    const apps = yield* Apps.make(visibility)
    const actions = yield* OperatorActions.make(visibility)
    const live = yield* LiveStreams.make(waitingFor)
    const pages = yield* ExecutionPages.make
    const uploads = yield* Uploads.make
    return {
      apps,
      executions: {
        start: starts.start,
        startCounted: starts.startCounted,
        get: waits.get,
        getJson: waits.getJson,
        list: pages.list,
        webhook: actions.webhook,
        redeliver: actions.redeliver,
        cancel: actions.cancel,
        events: live.events,
        follow: live.follow,
        logs: live.logs,
        await: waits.await
      },
      keys: {
        create: keys.create,
        revoke: keys.revoke,
        list: keys.list,
        authenticate: keys.authenticate,
        cached: keys.cached
      },
      uploads: { create: uploads.create },
      workspaces: {
        create: keys.ensureWorkspace,
        list: keys.listWorkspaces,
        set: keys.setWorkspace,
        principal: keys.principal
      },
      operator: {
        ready: actions.ready,
        drain: actions.drain,
        listExecutions: actions.listExecutions,
        prune: actions.prune
      }
    }
  })
)
