/**
 * The bodies appexec POSTs to a webhook (docs/webhooks.md). The interface's completion webhook is
 * `{ data: Execution }`, the polling response exactly. An execution started with `webhookEvents`
 * (an extension) sends every event, its completion included, with the event's `type` and
 * `timestamp` beside `data` (the shape Standard Webhooks recommends); a `logs` event also carries
 * the lines logged since the one before.
 */
import { Schema } from "effect"
import { Execution, Timestamp, WebhookEvent } from "./Execution.js"
import { LogLine } from "./Live.js"

/** A webhook body: the completion webhook (no `type`) or an event of an execution that asked for events. */
export const WebhookBody = Schema.Struct({
  /** Which event it is; absent on the completion webhook of an execution started without `webhookEvents`. */
  type: Schema.optional(WebhookEvent),
  /** When the event happened (start: `startedAt`, completion: `completedAt`); with `type`. */
  timestamp: Schema.optional(Timestamp),
  /** The execution as `GET /v1/executions/{executionId}` answers its `data`, as it was at the event. */
  data: Execution,
  /** A `logs` event's lines, oldest first: those logged since the previous `logs` event of the run. */
  logs: Schema.optional(Schema.Array(LogLine))
}).annotations({ identifier: "WebhookBody" })
export type WebhookBody = typeof WebhookBody.Type

/** Which event a body is: its `type`, `completed` when it has none (the interface's completion webhook). */
export const eventOf = (body: WebhookBody): WebhookEvent => body.type ?? "completed"
