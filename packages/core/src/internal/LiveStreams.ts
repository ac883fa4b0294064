/**
 * The live events of executions (docs/api.md#live-executions): the stream of one execution's
 * snapshots and reports, and its kept log. (Being built: see issue 28.)
 */
import type { Authentication } from "@appexec/api"
import type { EventName, LogLine } from "@appexec/api/Live"
import { Effect, type Stream } from "effect"
import type { ExecutionNotFound, StorageError } from "../Errors.js"
import type { Visibility } from "./Visibility.js"

type Principal = Authentication.Principal

/**
 * One event of an execution's stream, ready for the wire: its SSE `event` name, its `id` (a
 * decimal integer, increasing along the stream), and its `data` as JSON text (for `execution`,
 * exactly the JSON of the poll answer).
 */
export interface LiveEvent {
  readonly event: EventName
  readonly id: string
  readonly data: string
}

export const make = (_visibility: Visibility) =>
  Effect.succeed({
    events: (
      _principal: Principal,
      _executionId: string,
      _options?: { readonly lastEventId?: string | undefined }
    ): Effect.Effect<Stream.Stream<LiveEvent, StorageError>, ExecutionNotFound | StorageError> =>
      Effect.dieMessage("not built yet"),
    logs: (
      _principal: Principal,
      _executionId: string
    ): Effect.Effect<ReadonlyArray<LogLine>, ExecutionNotFound | StorageError> => Effect.dieMessage("not built yet")
  })
