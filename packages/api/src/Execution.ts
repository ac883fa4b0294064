/**
 * The execution resources of docs/api.md#execution, exactly as they appear on the wire, and the
 * stored record they are projected from.
 */
import { Schema } from "effect"
import { AppId, ExecutionId, WorkflowId } from "./Ids.js"

/** Execution status (docs/api.md#execution-states). */
export const ExecutionStatus = Schema.Literal("queued", "running", "completed", "failed")
export type ExecutionStatus = typeof ExecutionStatus.Type

/** Kind of an output's value (docs/api.md); `pending` until the output is produced. */
export const OutputType = Schema.Literal("pending", "text", "image", "video", "audio", "json")
export type OutputType = typeof OutputType.Type

/** Output status (docs/api.md). */
export const OutputStatus = Schema.Literal("pending", "completed", "failed")
export type OutputStatus = typeof OutputStatus.Type

/**
 * A point in time on the wire: ISO 8601 in UTC (`2026-11-22T10:00:00.000Z`), a `Date` in code.
 * Decoding accepts only the UTC ISO form so that what comes back is what went out.
 */
export const Timestamp = Schema.transform(
  Schema.String.pipe(
    Schema.pattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/, {
      message: () => "an ISO 8601 UTC timestamp such as 2026-11-22T10:00:00.000Z"
    })
  ),
  Schema.DateFromSelf.pipe(Schema.filter((d) => !Number.isNaN(d.getTime()))),
  {
    strict: true,
    decode: (s) => new Date(s),
    encode: (d) => d.toISOString()
  }
)

/** One output of an execution (docs/api.md#output). */
export const Output = Schema.Struct({
  id: Schema.String,
  label: Schema.String,
  type: OutputType,
  value: Schema.NullOr(Schema.String),
  status: OutputStatus,
  error: Schema.NullOr(Schema.String)
})
export type Output = typeof Output.Type

/** The inputs of an execution as it was accepted: values keyed by parameter name, defaults applied. */
export const Inputs = Schema.Record({ key: Schema.String, value: Schema.String })
export type Inputs = typeof Inputs.Type

/** The polling response and webhook payload (docs/api.md#execution, §4.5, §6.1). */
export const Execution = Schema.Struct({
  executionId: ExecutionId,
  workflowId: WorkflowId,
  /**
   * An extension (docs/api.md#app-and-inputs): the app the execution runs. appexec always sends
   * it; it is optional so that answers without it still decode.
   */
  appId: Schema.optional(AppId.annotations({ description: "The app the execution runs." })),
  status: ExecutionStatus,
  outputs: Schema.Array(Output),
  /**
   * An extension (docs/api.md#app-and-inputs): the inputs as the start request's were accepted,
   * defaults applied. appexec always sends them; optional so that answers without them still decode.
   */
  inputs: Schema.optional(
    Inputs.annotations({
      description: "The inputs as accepted, keyed by parameter name, with the defaults of omitted parameters."
    })
  ),
  errorMessage: Schema.NullOr(Schema.String),
  startedAt: Schema.NullOr(Timestamp),
  completedAt: Schema.NullOr(Timestamp),
  createdAt: Timestamp,
  /**
   * An extension (docs/api.md#attempt): how many workers have taken the execution up, 0 while no
   * worker has; more than 1 when a worker took it over after the previous one was lost. appexec
   * always sends it; it is optional so that answers without it still decode.
   */
  attempt: Schema.optional(
    Schema.Number.pipe(Schema.int(), Schema.nonNegative()).annotations({
      title: "attempt",
      description: "How many workers have taken the execution up: 0 until one does, 2 or more after a takeover."
    })
  ),
  /**
   * An extension (docs/api.md#queue-position): while the execution is `queued`, how many
   * executions of its workspace are ahead of it in the claim order. An estimate: fair turns
   * between workspaces, and caps on running executions, may take others first. Absent otherwise.
   */
  queuePosition: Schema.optional(
    Schema.Number.pipe(Schema.int(), Schema.nonNegative()).annotations({
      title: "queuePosition",
      description: "While queued: executions of the same workspace ahead of this one (an estimate)."
    })
  ),
  /**
   * An extension (docs/api.md#queue-position): while the execution is `queued` and held back —
   * no running worker could run it (none runs every node type of its app), or its app's or its
   * workspace's limit of running executions is reached — what it waits for, such as
   * `a worker for video.kenburns` or `the app's limit of 2 at once`. Absent otherwise.
   */
  waitingFor: Schema.optional(
    Schema.String.annotations({
      title: "waitingFor",
      description:
        "While queued and held back (no running worker could run it, or its app's or workspace's limit is reached): what it waits for."
    })
  )
})
export type Execution = typeof Execution.Type

/** The start response (docs/api.md#start-an-execution); `webhookUrl` is null when no webhook was given (docs/api.md). */
export const StartedExecution = Schema.Struct({
  executionId: ExecutionId,
  workflowId: WorkflowId,
  status: Schema.Literal("queued"),
  webhookUrl: Schema.NullOr(Schema.String),
  outputs: Schema.Array(Output)
})
export type StartedExecution = typeof StartedExecution.Type

/**
 * One page of an execution listing (docs/api.md#list-executions): newest first, and the cursor of
 * the next page, null on the last.
 */
export const ExecutionPage = Schema.Struct({
  data: Schema.Array(Execution),
  nextCursor: Schema.NullOr(Schema.String).annotations({
    description: "Send it back as `cursor` for the next page; null when this page is the last."
  })
}).annotations({ identifier: "ExecutionPage" })
export type ExecutionPage = typeof ExecutionPage.Type

/**
 * An event an execution sends to its webhook (docs/webhooks.md#events), an extension: `start`
 * (it began running), `output` (its outputs changed), `logs` (its nodes logged lines) and
 * `completed` (it ended, `completed` or `failed`: the interface's completion webhook).
 */
export const WebhookEvent = Schema.Literal("start", "output", "logs", "completed")
export type WebhookEvent = typeof WebhookEvent.Type

/** Every webhook event, in the order of an execution's life (the order stored lists keep). */
export const WEBHOOK_EVENTS: ReadonlyArray<WebhookEvent> = WebhookEvent.literals

/**
 * The lowest and highest priority a start may ask for (docs/scaling.md#priorities), an
 * extension: a step of priority is worth a minute of waiting; a workspace may be held lower.
 */
export const PRIORITY_MIN = -10
export const PRIORITY_MAX = 10

/** A start's priority: an integer from `PRIORITY_MIN` to `PRIORITY_MAX`, 0 when not given. */
export const Priority = Schema.Int.pipe(Schema.between(PRIORITY_MIN, PRIORITY_MAX)).annotations({
  description:
    `How soon the execution is taken, an integer from ${PRIORITY_MIN} to ${PRIORITY_MAX} (default 0): a step of priority goes before executions up to a minute older, so nothing waits for ever. A workspace may be held to a lower highest priority.`
})

/** The events of an execution started without `webhookEvents`: the completion webhook alone. */
export const DEFAULT_WEBHOOK_EVENTS: ReadonlyArray<WebhookEvent> = ["completed"]

/** One attempt to deliver an execution's webhook (docs/webhooks.md#failed-deliveries). */
export const WebhookAttempt = Schema.Struct({
  at: Timestamp,
  /** The status the receiver answered; null when no answer came (refused, timed out, connection failed). */
  statusCode: Schema.NullOr(Schema.Number),
  /** Why the attempt failed; null when it succeeded. */
  error: Schema.NullOr(Schema.String)
})
export type WebhookAttempt = typeof WebhookAttempt.Type

/** The delivery of one event (docs/webhooks.md#events): one message, retried until delivered or given up. */
export const EventDelivery = Schema.Struct({
  id: Schema.String.annotations({
    description: "The message id: the `webhook-id` header of every attempt; `delivery` of a redelivery."
  }),
  type: WebhookEvent,
  status: Schema.Literal("pending", "delivered", "failed"),
  createdAt: Timestamp,
  attempts: Schema.Array(WebhookAttempt)
}).annotations({ identifier: "EventDelivery" })
export type EventDelivery = typeof EventDelivery.Type

/**
 * The delivery of an execution's webhook: `url`, and the `status` and `attempts` of its
 * completion webhook, `pending` until it is delivered or given up (`failed`); with every event's
 * delivery in `deliveries`. An execution that does not send `completed` has the status of all its
 * deliveries together (`pending` while it runs or one is pending, `failed` when one failed, else
 * `delivered`) and no attempts of its own (docs/webhooks.md#events).
 */
export const WebhookDelivery = Schema.Struct({
  url: Schema.String,
  status: Schema.Literal("pending", "delivered", "failed"),
  attempts: Schema.Array(WebhookAttempt),
  /**
   * An extension (docs/webhooks.md#events): the events the execution sends, `["completed"]`
   * unless it was started with `webhookEvents`. appexec always sends it; optional so that
   * answers without it still decode.
   */
  events: Schema.optional(
    Schema.Array(WebhookEvent).annotations({ description: "The events the execution sends to its webhook." })
  ),
  /**
   * An extension (docs/webhooks.md#events): every delivery of the execution, one per event sent,
   * oldest first. appexec always sends it; optional so that answers without it still decode.
   */
  deliveries: Schema.optional(
    Schema.Array(EventDelivery).annotations({
      description: "Every delivery of the execution, one per event sent, oldest first, with its attempts."
    })
  )
}).annotations({ identifier: "WebhookDelivery" })
export type WebhookDelivery = typeof WebhookDelivery.Type
