/**
 * Following an execution live (docs/api.md#live-executions): the server-sent events of
 * `GET /v1/executions/{id}/events` as typed `LiveEvent`s. The `execution` event comes first and at
 * every change of status or outputs, `progress`, `log` and `preview` (a live preview image's URL)
 * as the nodes report; events of names this client does not know are skipped. A connection that
 * drops (or goes silent for three heartbeats) is opened again with `Last-Event-ID`, so nothing is
 * missed and nothing repeated, after a backoff of the client's `RetryPolicy`; after `maxRetries`
 * reconnections in a row that received nothing the stream fails with a `NetworkError`. The stream
 * ends after the terminal `execution` event (`completed` or `failed`).
 */
import * as Live from "@appexec/api/Live"
import { Duration } from "effect"
import type { RequestError } from "./ClientError.js"
import { isTerminal as isTerminalStatus } from "./Polling.js"

/** One event of the stream, by its `event` name, with its `id` and typed `data`. */
export type LiveEvent = Live.LiveEvent

/** Options of `stream`. */
export interface StreamOptions {
  /** Resume after this event id (a `LiveEvent.id` seen before) instead of from the start. */
  readonly lastEventId?: string
}

/** A connection silent this long (three missed heartbeats) counts as dropped. */
export const IDLE_TIMEOUT: Duration.Duration = Duration.seconds(3 * Live.HEARTBEAT_SECONDS)

/** True for the `execution` event that ends the stream: `completed` or `failed`. */
export const isTerminal = (event: LiveEvent): boolean =>
  event.event === "execution" && isTerminalStatus(event.data.status)

/** A 404 from a path that is no endpoint: a server older than the event stream. */
export const isRouteMissing = (error: RequestError): boolean =>
  error._tag === "ApiError" && error.status === 404 &&
  (error.code === "unexpected_response" || error.message.startsWith("No endpoint "))
