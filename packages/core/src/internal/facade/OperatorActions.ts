/**
 * What acts on executions rather than reading them, and what operators use: cancels, the state
 * of a webhook's delivery and its redelivery, readiness, draining, listings across workspaces and
 * retention (docs/api.md#cancel-an-execution, docs/operations.md).
 */
import type { Authentication } from "@appexec/api"
import { DEFAULT_WEBHOOK_EVENTS, type ExecutionStatus, type WebhookDelivery } from "@appexec/api/Execution"
import type { WorkspaceId } from "@appexec/api/Ids"
import { Duration, Effect, Either, Option } from "effect"
import { AppexecConfig } from "../../AppexecConfig.js"
import { recordFinished } from "../../AppexecMetrics.js"
import { BlobStore } from "../../BlobStore.js"
import { ExecutionFinished, InvalidRequest, WebhookNotRedeliverable } from "../../Errors.js"
import { ExecutionEvents } from "../../ExecutionEvents.js"
import { failNow, isTerminal } from "../../ExecutionLifecycle.js"
import { type ExecutionRecord, toExecution } from "../../ExecutionRecord.js"
import { ExecutionStore } from "../../ExecutionStore.js"
import { IdGenerator } from "../../IdGenerator.js"
import { KeyStore } from "../../KeyStore.js"
import { Shutdown } from "../../Shutdown.js"
import { DeliveryId, entryFor, eventOf, type OutboxEntry, WebhookOutbox } from "../../WebhookOutbox.js"
import { CANCELED_MESSAGE, Cancellations } from "../engine/Cancellations.js"
import * as Retention from "../engine/Retention.js"
import { AppCatalog } from "./AppCatalog.js"
import * as Uploads from "./Uploads.js"
import type { Visibility } from "./Visibility.js"

type Principal = Authentication.Principal

/** Which executions `listExecutions` answers. */
export interface ExecutionFilter {
  /** Workspace name. */
  readonly workspace?: string | undefined
  readonly status?: ExecutionStatus | undefined
  readonly limit?: number | undefined
}

/** Default and bounds of `listExecutions`'s limit. */
export const OPERATOR_LIST_LIMIT = { default: 50, min: 1, max: 1000 } as const

/** The newest completion entry among `entries` (one per execution; a redelivery re-arms it). */
const completionOf = (entries: ReadonlyArray<OutboxEntry>): OutboxEntry | undefined => {
  for (let i = entries.length - 1; i >= 0; i--) if (eventOf(entries[i]!) === "completed") return entries[i]
  return undefined
}

const attemptsOf = (entry: OutboxEntry | undefined) =>
  (entry?.attempts ?? []).map((a) => ({ at: new Date(a.at), statusCode: a.statusCode, error: a.error }))

/**
 * The answer about the webhook of `record` (docs/webhooks.md#events), from its outbox `entries`:
 * the completion webhook's status and attempts (pending before it has an entry), and every
 * event's delivery. An execution that does not send `completed` has the status of all its
 * deliveries together: pending while it runs or one is pending, failed when one failed.
 */
export const deliveryOf = (
  record: ExecutionRecord,
  url: string,
  entries: ReadonlyArray<OutboxEntry>
): WebhookDelivery => {
  const events = record.webhookEvents ?? DEFAULT_WEBHOOK_EVENTS
  const completion = completionOf(entries)
  const status: WebhookDelivery["status"] = events.includes("completed")
    ? completion?.status ?? "pending"
    : !isTerminal(record.status) || entries.some((e) => e.status === "pending")
    ? "pending"
    : entries.some((e) => e.status === "failed")
    ? "failed"
    : "delivered"
  return {
    url,
    status,
    attempts: attemptsOf(completion),
    events,
    deliveries: entries.map((entry) => ({
      id: entry.deliveryId,
      type: eventOf(entry),
      status: entry.status,
      createdAt: new Date(entry.createdAt),
      attempts: attemptsOf(entry)
    }))
  }
}

/** The actions of the facade, over the reads of `visibility`. */
export const make = (visibility: Visibility) =>
  Effect.gen(function*() {
    const config = yield* AppexecConfig
    const executionStore = yield* ExecutionStore
    const keyStore = yield* KeyStore
    const catalog = yield* AppCatalog
    const events = yield* ExecutionEvents
    const ids = yield* IdGenerator
    const blobs = yield* BlobStore
    const cancellations = yield* Cancellations
    const outbox = yield* WebhookOutbox
    const now = Effect.clockWith((clock) => clock.currentTimeMillis)
    const shutdown = yield* Shutdown
    const { visibleExecution } = visibility

    return {
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
            const entry = entryFor(failed, DeliveryId.make(yield* ids.uuid), at, failed.traceParent)
            if (yield* executionStore.cancelQueued(failed, at, entry)) {
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
        return deliveryOf(record, record.webhookUrl, yield* outbox.forExecution(record.executionId))
      }),
      redeliver: Effect.fn("Appexec.executions.redeliver")(
        function*(executionId: string, principal?: Principal, deliveryId?: string) {
          const record = yield* visibleExecution(executionId, principal)
          const refuse = (reason: WebhookNotRedeliverable["reason"]) =>
            new WebhookNotRedeliverable({ executionId: record.executionId, reason })
          if (record.webhookUrl === null) return yield* refuse("no_webhook")
          const entries = yield* outbox.forExecution(record.executionId)
          let entry: OutboxEntry | undefined
          if (deliveryId === undefined) {
            if (!isTerminal(record.status)) return yield* refuse("not_finished")
            // Written with the terminal transition, so a finished execution with a webhook has one
            // (unless its events leave the completion out).
            entry = completionOf(entries)
            if (entry === undefined) return yield* refuse("unknown_delivery")
          } else {
            entry = entries.find((e) => e.deliveryId === deliveryId)
            if (entry === undefined) return yield* refuse("unknown_delivery")
          }
          if (entry.status === "pending") return yield* refuse("under_way")
          // Armed only while still over: of two redeliveries at once, one arms it, the other is refused.
          const armed = yield* outbox.redeliver(entry.deliveryId, yield* now)
          if (Option.isNone(armed)) return yield* refuse("under_way")
          yield* Effect.logInfo(`webhook ${record.executionId}: redelivery of its ${eventOf(entry)} event requested`)
          return deliveryOf(
            record,
            record.webhookUrl,
            entries.map((e) => (e.deliveryId === armed.value.deliveryId ? armed.value : e))
          )
        }
      ),
      ready: Effect.gen(function*() {
        if (shutdown.unsafeStopping()) return Option.some("draining")
        const probe = yield* executionStore.countOpen(yield* now).pipe(Effect.timeoutOption("2 seconds"), Effect.either)
        if (probe._tag === "Left") return Option.some("storage unavailable")
        return Option.isNone(probe.right) ? Option.some("storage did not answer within 2 s") : Option.none()
      }),
      drain: shutdown.begin,
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
        const at = yield* now
        const cutoff = at - Duration.toMillis(retention)
        const deleted = yield* Retention.pruneBefore(cutoff).pipe(
          Effect.provideService(ExecutionStore, executionStore),
          Effect.provideService(BlobStore, blobs)
        )
        // Expired uploads go whatever `olderThan` says: their URLs no longer work.
        yield* Uploads.sweep(at).pipe(Effect.provideService(BlobStore, blobs))
        return deleted
      })
    }
  })
