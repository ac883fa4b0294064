/**
 * Live executions (docs/api.md#live-executions), an extension of the spec: what a running
 * execution reports besides its status and outputs. Its nodes' progress, log lines and live
 * preview images; the log read back as JSON (`GET /v1/executions/{id}/logs`), all of them followed
 * as server-sent events (`GET /v1/executions/{id}/events`) together with every change of the
 * execution itself.
 */
import { Schema } from "effect"
import { Execution, Timestamp } from "./Execution.js"

/** How much a log line matters. */
export const LogLevel = Schema.Literal("info", "warn", "error")
export type LogLevel = typeof LogLevel.Type

/**
 * One line a node logged. `nodeId` is null on lines appexec writes itself (the marker that says
 * how many older lines were dropped to keep the log bounded).
 */
export const LogLine = Schema.Struct({
  at: Timestamp,
  level: LogLevel,
  nodeId: Schema.NullOr(Schema.String),
  message: Schema.String
}).annotations({ identifier: "LogLine" })
export type LogLine = typeof LogLine.Type

/** How far a node is: `fraction` from 0 to 1, never lower than the node reported before. */
export const Progress = Schema.Struct({
  nodeId: Schema.String,
  fraction: Schema.Number.pipe(Schema.between(0, 1)),
  message: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Progress" })
export type Progress = typeof Progress.Type

/**
 * The newest live preview image of a running execution (a ComfyUI sampler's frame, say): `url` is
 * a media URL to GET with the API key, as outputs' URLs are; only the newest preview of an
 * execution is kept, so an older event's URL may no longer answer.
 */
export const Preview = Schema.Struct({
  nodeId: Schema.String,
  url: Schema.String,
  mediaType: Schema.Literal("image/jpeg", "image/png"),
  at: Timestamp
}).annotations({ identifier: "Preview" })
export type Preview = typeof Preview.Type

/** `GET /v1/executions/{id}/logs`: the kept lines, oldest first. */
export const LogsResponse = Schema.Struct({ data: Schema.Array(LogLine) }).annotations({
  identifier: "LogsResponse"
})
export type LogsResponse = typeof LogsResponse.Type

/**
 * One event of the stream, by its SSE `event` name. `id` is the SSE `id`: a decimal integer,
 * increasing along the stream, to send back as `Last-Event-ID` to resume after it.
 */
export type LiveEvent =
  | { readonly event: "execution"; readonly id: string; readonly data: Execution }
  | { readonly event: "progress"; readonly id: string; readonly data: Progress }
  | { readonly event: "log"; readonly id: string; readonly data: LogLine }
  | { readonly event: "preview"; readonly id: string; readonly data: Preview }

/** The decoders of each event's `data` (its JSON), by event name. */
export const EventData = {
  execution: Execution,
  progress: Progress,
  log: LogLine,
  preview: Preview
} as const

/** The SSE event names of the stream. */
export type EventName = keyof typeof EventData

/** Seconds between the stream's heartbeat comments (`: keep-alive`) when nothing else is sent. */
export const HEARTBEAT_SECONDS = 15

/**
 * The event that ends a stream whose server is stopping (docs/api.md#live-executions): no `id`
 * (the last one received stays the one to resume after), its `data` a JSON `{ "reason" }`, and a
 * `retry:` of `RECONNECT_RETRY_MS`. The client opens the stream again with `Last-Event-ID`, and
 * reaches another server behind the same address.
 */
export const RECONNECT_EVENT = "reconnect"

/** The reconnection time, in milliseconds, the `reconnect` event sets (its `retry:` field). */
export const RECONNECT_RETRY_MS = 1000
