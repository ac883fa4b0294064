/**
 * Port: the durable outbox of webhooks (docs/api.md, docs/webhooks.md#events). The completion
 * webhook's entry is written together with the terminal transition (`ExecutionStore.save`); the
 * entries of the other events (`start`, `output`, `logs`) are added as the execution's run makes
 * them (`add`, `WebhookEvents`), each with its body. The webhook dispatcher delivers them all alike.
 */
import { WebhookEvent } from "@appexec/api/Execution"
import { ExecutionId, UserId } from "@appexec/api/Ids"
import { Context, type Effect, type Option, Schema } from "effect"
import type { StorageError } from "./Errors.js"
import type { ExecutionRecord } from "./ExecutionRecord.js"

/** Identifier of a webhook delivery in the outbox. */
export const DeliveryId = Schema.UUID.pipe(Schema.brand("DeliveryId"))
export type DeliveryId = typeof DeliveryId.Type

/** One recorded delivery attempt. */
export const DeliveryAttempt = Schema.Struct({
  at: Schema.Number,
  /** The HTTP status the receiver answered, null when no answer came. */
  statusCode: Schema.NullOr(Schema.Number),
  /** Why the attempt failed, null when it succeeded. */
  error: Schema.NullOr(Schema.String)
})
export type DeliveryAttempt = typeof DeliveryAttempt.Type

/** Delivery state of an outbox entry. */
export const DeliveryStatus = Schema.Literal("pending", "delivered", "failed")
export type DeliveryStatus = typeof DeliveryStatus.Type

/** A webhook to deliver for a finished execution. */
export const OutboxEntry = Schema.Struct({
  deliveryId: DeliveryId,
  executionId: ExecutionId,
  userId: UserId,
  url: Schema.String,
  status: DeliveryStatus,
  /** When the next attempt is due (epoch ms); meaningful while pending. */
  nextAttemptAt: Schema.Number,
  attempts: Schema.Array(DeliveryAttempt),
  createdAt: Schema.Number,
  /** The W3C `traceparent` of the run that finished the execution: every attempt continues its trace. */
  traceParent: Schema.optional(Schema.String),
  /**
   * Set by `redeliver`: the delivery was armed again for one attempt, after which it is over
   * whatever the outcome (no retries). Absent on a delivery never redelivered.
   */
  redelivery: Schema.optional(Schema.Literal(true)),
  /**
   * The event it delivers. Absent on the completion webhook of an execution started without
   * `webhookEvents`: its body is the interface's, `{ data }`, with no `type`.
   */
  event: Schema.optional(WebhookEvent),
  /**
   * The body to send, as the event made it (`start`, `output`, `logs`). Absent on the completion
   * webhook, whose body is the execution as stored when each attempt is sent.
   */
  body: Schema.optional(Schema.String)
})
export type OutboxEntry = typeof OutboxEntry.Type

/** The event an entry delivers: its `event`, `completed` when it has none. */
export const eventOf = (entry: Pick<OutboxEntry, "event">): WebhookEvent => entry.event ?? "completed"

/**
 * The entry to record with a finished execution that asked for a webhook; none when it did not,
 * or when its `webhookEvents` leave out `completed`. An execution that gave `webhookEvents` has
 * its completion sent as an event (`event: "completed"`: its body says its `type`).
 * `traceParent` is the span its attempts continue the trace from.
 */
export const entryFor = (
  record: ExecutionRecord,
  deliveryId: DeliveryId,
  at: number,
  traceParent?: string | undefined
): OutboxEntry | undefined =>
  (record.status === "completed" || record.status === "failed") && record.webhookUrl !== null &&
    (record.webhookEvents === undefined || record.webhookEvents.includes("completed"))
    ? {
      ...(traceParent === undefined ? {} : { traceParent }),
      ...(record.webhookEvents === undefined ? {} : { event: "completed" as const }),
      deliveryId,
      executionId: record.executionId,
      userId: record.userId,
      url: record.webhookUrl,
      status: "pending",
      nextAttemptAt: at,
      attempts: [],
      createdAt: at
    }
    : undefined

/**
 * The claim an attempt is recorded under: the entry as `claimDue` handed it out, whose
 * `nextAttemptAt` is the end of that claim's lease.
 */
export type Claim = Pick<OutboxEntry, "deliveryId" | "nextAttemptAt">

/** The webhook outbox. Time is read from `Clock`. */
export class WebhookOutbox extends Context.Tag("@appexec/core/WebhookOutbox")<
  WebhookOutbox,
  {
    /**
     * Atomically takes up to `limit` pending entries whose attempt is due, oldest first, and
     * pushes their `nextAttemptAt` to now + `leaseMs` (positive) so that no other dispatcher takes
     * them meanwhile. The entries are returned with that lease end as `nextAttemptAt`: it fences
     * `recordAttempt`.
     */
    readonly claimDue: (limit: number, leaseMs: number) => Effect.Effect<ReadonlyArray<OutboxEntry>, StorageError>
    /**
     * Appends an attempt made under `claim`; `next` is the time of the next attempt, or the final
     * status. Writes only while the claim is current (the entry is still pending with the claim's
     * lease end, so no later claim and no other record came in between) and answers whether it wrote;
     * `false` means the claim was lost and someone else owns the entry now.
     */
    readonly recordAttempt: (
      claim: Claim,
      attempt: DeliveryAttempt,
      next: { readonly retryAt: number } | { readonly final: "delivered" | "failed" }
    ) => Effect.Effect<boolean, StorageError>
    /**
     * Arms a delivery that is over (`delivered` or `failed`) for one more attempt, due at `at`,
     * after which it is over again whatever the outcome (`redelivery`); its attempts are kept.
     * Answers the entry as armed; none, writing nothing, when it is `pending` (under way, or armed
     * by another call first) or unknown. Dispatchers that wait on `awaitDue` are woken.
     */
    readonly redeliver: (deliveryId: DeliveryId, at: number) => Effect.Effect<Option.Option<OutboxEntry>, StorageError>
    /**
     * Adds entries made as an execution runs (`start`, `output` and `logs` events, each with its
     * body), pending and due at their `nextAttemptAt`, in one write. Not fenced by a lease: an
     * event a lost worker made is delivered like any other. Dispatchers that wait on `awaitDue`
     * are woken.
     */
    readonly add: (entries: ReadonlyArray<OutboxEntry>) => Effect.Effect<void, StorageError>
    /** The deliveries of an execution, oldest first. */
    readonly forExecution: (executionId: ExecutionId) => Effect.Effect<ReadonlyArray<OutboxEntry>, StorageError>
    /**
     * Optional: completes when another process (or call) may have added an entry that is due now
     * (a queued execution canceled by an API process that delivers no webhooks, a redelivery).
     * Dispatchers race it with their poll interval; an outbox without it is polled.
     */
    readonly awaitDue?: Effect.Effect<void> | undefined
  }
>() {}
