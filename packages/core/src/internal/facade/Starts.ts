/**
 * Starts of executions (docs/api.md#start-an-execution): the app must be visible, the webhook URL
 * acceptable and the inputs valid; an `Idempotency-Key` inserts once and replays the first answer.
 * A start is answered once its execution is committed.
 */
import type { Authentication } from "@appexec/api"
import {
  PRIORITY_MAX,
  PRIORITY_MIN,
  type StartedExecution,
  WEBHOOK_EVENTS,
  type WebhookEvent
} from "@appexec/api/Execution"
import { ExecutionId } from "@appexec/api/Ids"
import { Clock, Context, Effect, Either, Option } from "effect"
import type { CompiledApp } from "../../AppDefinition.js"
import { AppexecConfig, millis } from "../../AppexecConfig.js"
import { recordStarted, unsafeRecordStarted } from "../../AppexecMetrics.js"
import type { AppRecord } from "../../AppStore.js"
import * as CountedStarts from "../../CountedStarts.js"
import {
  type AppAccessDenied,
  type AppNotFound,
  IdempotencyKeyReused,
  type InvalidInputs,
  InvalidRequest,
  InvalidWebhookUrl,
  type StorageError
} from "../../Errors.js"
import { ExecutionEvents } from "../../ExecutionEvents.js"
import { placeholder } from "../../ExecutionLifecycle.js"
import { type ExecutionRecord, toStartedExecution } from "../../ExecutionRecord.js"
import { ExecutionStore } from "../../ExecutionStore.js"
import { IdGenerator } from "../../IdGenerator.js"
import { isHttpUrl, validateInputs } from "../../InputValidation.js"
import { KeyStore } from "../../KeyStore.js"
import { OutboundHttp } from "../../OutboundHttp.js"
import { decide, windowStartOf } from "../../RateLimiter.js"
import * as TraceContext from "../../TraceContext.js"
import { canonicalJson, sha256Hex } from "../crypto/hash.js"
import type { Visibility } from "./Visibility.js"

type Principal = Authentication.Principal

/** An `Idempotency-Key`: 1 to 255 visible ASCII characters. */
export const isIdempotencyKey = (key: string): boolean => /^[\x21-\x7e]{1,255}$/.test(key)

/** Longest accepted webhook URL. */
export const MAX_WEBHOOK_URL_LENGTH = 2048

/** Options of a start beside the inputs. */
export interface StartOptions {
  /** Absolute http(s) URL that receives the signed result. */
  readonly webhook?: string | undefined
  /** The same key (per workspace) answers the first execution again instead of starting another. */
  readonly idempotencyKey?: string | undefined
  /**
   * The events the webhook receives (docs/webhooks.md#events): names of `WEBHOOK_EVENTS`, as the
   * request sent them (checked here); the completion webhook alone when absent. Needs `webhook`.
   */
  readonly webhookEvents?: ReadonlyArray<unknown> | undefined
  /**
   * How soon the execution is taken (docs/scaling.md#priorities), as the request sent it (checked
   * here): an integer from `PRIORITY_MIN` to `PRIORITY_MAX`, at most the workspace's
   * `maxPriority`; 0 when absent.
   */
  readonly priority?: unknown
}

/** The priority a start asks for (0 when absent); why not when it is not an integer in range. */
export const priorityOf = (priority: unknown): Either.Either<number, InvalidRequest> =>
  priority === undefined
    ? Either.right(0)
    : typeof priority === "number" && Number.isInteger(priority) && priority >= PRIORITY_MIN &&
        priority <= PRIORITY_MAX
    ? Either.right(priority)
    : Either.left(
      new InvalidRequest({
        reason: `\`priority\` must be an integer from ${PRIORITY_MIN} to ${PRIORITY_MAX} (default 0).`
      })
    )

/**
 * The webhook events a start asks for, in the order of `WEBHOOK_EVENTS` and each once; why not
 * when they are not a non-empty list of event names, or come without a webhook.
 */
export const webhookEventsOf = (
  events: ReadonlyArray<unknown>,
  webhook: string | undefined
): Either.Either<ReadonlyArray<WebhookEvent>, InvalidRequest> => {
  const names = WEBHOOK_EVENTS.join(", ")
  if (webhook === undefined) {
    return Either.left(new InvalidRequest({ reason: "`webhookEvents` needs a `webhook` URL to send them to." }))
  }
  if (events.length === 0) {
    return Either.left(new InvalidRequest({ reason: `\`webhookEvents\` names no event; give some of ${names}.` }))
  }
  const unknown = events.find((event) => !WEBHOOK_EVENTS.some((name) => name === event))
  if (unknown !== undefined) {
    return Either.left(
      new InvalidRequest({
        reason: `\`webhookEvents\` has ${
          typeof unknown === "string" ? `'${unknown.slice(0, 32)}'` : "a value that is not a string"
        }; the events are ${names}.`
      })
    )
  }
  return Either.right(WEBHOOK_EVENTS.filter((name) => events.includes(name)))
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

/** The start of executions, over the reads of `visibility`. */
export const make = (visibility: Visibility) =>
  Effect.gen(function*() {
    const config = yield* AppexecConfig
    const executionStore = yield* ExecutionStore
    const events = yield* ExecutionEvents
    const ids = yield* IdGenerator
    const keyStore = yield* KeyStore
    // Only to refuse at start a webhook URL the client would surely refuse at delivery.
    const outbound = yield* Effect.serviceOption(OutboundHttp)
    const now = Effect.clockWith((clock) => clock.currentTimeMillis)
    const traced = yield* TraceContext.spansExported
    const counted = yield* Effect.serviceOption(CountedStarts.CountedStarts)

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

    /**
     * Fails when `priority` is above the highest the principal's workspace may ask for (its
     * `maxPriority`, else `PRIORITY_MAX`). Run only for a raised priority: a start at 0 or below
     * reads no workspace.
     */
    const allowPriority = (
      principal: Principal,
      priority: number
    ): Effect.Effect<void, InvalidRequest | StorageError> =>
      Effect.flatMap(keyStore.getWorkspace(principal.workspaceId), (workspace) => {
        const highest = Option.getOrUndefined(workspace)?.maxPriority ?? PRIORITY_MAX
        return priority <= highest ? Effect.void : Effect.fail(
          new InvalidRequest({
            reason: `\`priority\` ${priority} is above ${highest}, the highest this workspace may start at.`
          })
        )
      })

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
      // The request as sent: a replay must name the same app, inputs and webhook (and its events
      // and priority, when given: a request without them keeps the fingerprint it always had).
      const fingerprint = sha256Hex(
        canonicalJson({
          appId,
          inputs,
          webhook: webhook ?? null,
          ...(record.webhookEvents === undefined ? {} : { webhookEvents: record.webhookEvents }),
          ...(record.priority === undefined ? {} : { priority: record.priority })
        })
      )
      const at = yield* now
      const inserted = yield* executionStore.insertIdempotent(stored, {
        workspaceId: principal.workspaceId,
        key: idempotencyKey,
        fingerprint,
        expiresAt: at + millis(config.idempotencyKeyTtl)
      }, at)
      if (inserted._tag === "Inserted") {
        yield* recordStarted
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
     * Validates a start of the app `workflow` finds and queues its execution with `insert`
     * (which answers none when it did not insert). Every start runs it: no generator on the
     * common path (no idempotency key).
     */
    const startWith = <A, E>(
      principal: Principal,
      inputs: unknown,
      options: StartOptions,
      workflow: Effect.Effect<{ readonly app: AppRecord; readonly compiled: CompiledApp }, E>,
      insert: (record: ExecutionRecord, stored: ExecutionRecord) => Effect.Effect<A, StartError>
    ): Effect.Effect<A, StartError | E> => {
      const webhook = options.webhook
      return Effect.flatMap(workflow, ({ app, compiled }): Effect.Effect<A, StartError> => {
        const refusal = webhook === undefined ? undefined : webhookRefusal(webhook)
        if (refusal !== undefined) return Effect.fail(refusal)
        const webhookEvents = options.webhookEvents === undefined
          ? undefined
          : webhookEventsOf(options.webhookEvents, webhook)
        if (webhookEvents !== undefined && Either.isLeft(webhookEvents)) return Effect.fail(webhookEvents.left)
        const priority = priorityOf(options.priority)
        if (Either.isLeft(priority)) return Effect.fail(priority.left)
        const resolved = validateInputs(compiled.parameters, inputs)
        if (Either.isLeft(resolved)) return Effect.fail(resolved.left)
        const queue = Effect.flatMap(ids.uuid, (executionId) =>
          // The time, and the trace this request is part of (the run and the webhook attempts
          // continue it), read from the fiber in one step.
          Effect.withFiberRuntime<A, StartError>((fiber) => {
            const createdAt = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
            const traceParent = TraceContext.ofSpan(fiber.currentSpan)
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
              ...(webhookEvents === undefined ? {} : { webhookEvents: webhookEvents.right }),
              // Only a priority other than the default is kept: the rows write 0 for none.
              ...(priority.right === 0 ? {} : { priority: priority.right }),
              createdAt,
              startedAt: null,
              completedAt: null
            }
            return insert(record, traceParent === undefined ? record : { ...record, traceParent })
          }))
        return priority.right <= 0 ? queue : Effect.zipRight(allowPriority(principal, priority.right), queue)
      })
    }

    /** Once committed: counted and announced in one step, and answered. */
    const started = (record: ExecutionRecord): StartedExecution => {
      unsafeRecordStarted()
      events.unsafePublish(record)
      return toStartedExecution(record)
    }

    /** Validates a start and queues its execution: answered once the execution is committed. */
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
      return startWith(
        principal,
        inputs,
        options,
        visibility.visibleWorkflow(principal, appId),
        (record, stored) =>
          idempotencyKey !== undefined
            ? startIdempotent(principal, appId, inputs, options.webhook, idempotencyKey, record, stored)
            : Effect.map(executionStore.insert(stored), () => started(record))
      )
    }

    /**
     * A start without an idempotency key whose hit is counted by the statement that inserts it
     * (`CountedStarts`), its key and app taken from the caches: `counting.keyRevision` is the key
     * revision the principal was cached under. Answers none when it inserted nothing: when no
     * statement ran (`counting.decision` stays unset: the app is not cached, the start is refused,
     * or the storage counts no starts) or when the statement did not insert (refused by the rate
     * limit, or the revisions moved since the caches were filled).
     */
    const startCounted = (
      principal: Principal,
      appId: string,
      inputs: unknown,
      options: StartOptions,
      counting: CountedStarts.Counting
    ): Effect.Effect<StartedExecution | undefined, StartError> => {
      if (Option.isNone(counted) || options.idempotencyKey !== undefined) return Effect.succeed(undefined)
      const store = counted.value
      return Effect.flatMap(visibility.cachedWorkflow(principal, appId), (
        cached
      ): Effect.Effect<StartedExecution | undefined, StartError> =>
        cached === undefined ? Effect.succeed(undefined) : startWith(
          principal,
          inputs,
          options,
          Effect.succeed(cached),
          (record, stored) =>
            Effect.map(
              store.start({
                key: counting.key,
                now: counting.now,
                policy: counting.policy,
                record: stored,
                revisions: { keys: counting.keyRevision, apps: cached.revision }
              }),
              ({ counts, inserted }) => {
                const { now, policy } = counting
                counting.decision = decide(policy, now, windowStartOf(now, policy.windowMs), counts)
                return inserted ? started(record) : undefined
              }
            )
        ))
    }

    /** Validates inputs and queues an execution (docs/api.md#start-an-execution). */
    const start: (
      principal: Principal,
      appId: string,
      inputs: unknown,
      options?: StartOptions
    ) => Effect.Effect<StartedExecution, StartError> = traced
      // A span only when spans go somewhere: the default tracer keeps them to itself.
      ? (principal, appId, inputs, options = {}) =>
        Effect.withSpan(startExecution(principal, appId, inputs, options), "Appexec.executions.start")
      : startExecution
    /** `startCounted`, in the span a start has when spans are exported. */
    const spanned: typeof startCounted = traced
      ? (principal, appId, inputs, options, counting) =>
        Effect.withSpan(startCounted(principal, appId, inputs, options, counting), "Appexec.executions.start")
      : startCounted
    return { start, startCounted: Option.isSome(counted) ? spanned : undefined } as const
  })
