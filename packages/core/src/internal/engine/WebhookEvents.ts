/**
 * The webhook events an execution asks for beyond its completion (docs/webhooks.md#events):
 * `start`, `output` and `logs`, each a durable outbox entry (`WebhookOutbox.add`) with its body
 * made here, then signed, sent and retried by the dispatcher like the completion webhook (whose
 * entry is written with the terminal transition, `entryFor`).
 *
 * One place follows the runs of this process for them, and touches none of the run's code: every
 * change a run stores is announced in-process (`ExecutionEvents`: its start, each output it settles
 * early, its end), and every write of its reports wakes the execution's listeners. So:
 * - `start`: the running record of an attempt with no output settled yet (the `Started`
 *   transition, published once per start of a run);
 * - `output`: a record with more outputs settled than the last `output` event showed;
 * - `logs`: the lines of the run's attempt stored since the last `logs` event
 *   (`ExecutionReports.after`), with the execution as last seen.
 * `output` and `logs` are throttled each on its own: at most one event every `THROTTLE_MS` per
 * execution, and the last change is always sent, at the end of the window (also after the end of
 * the execution). Only executions that ask for `output` or `logs` are followed (a fiber each,
 * until their end); the others cost a look at each announcement.
 *
 * An event is made after the change it reports is stored: a worker lost in between sends it no
 * more, and the run taken up again sends its own.
 */
import type { WebhookEvent } from "@appexec/api/Execution"
import type { ExecutionId } from "@appexec/api/Ids"
import { Clock, Duration, Effect, Either, FiberSet, Layer, Option, Queue } from "effect"
import type { StorageError } from "../../Errors.js"
import { ExecutionEvents } from "../../ExecutionEvents.js"
import { isTerminal } from "../../ExecutionLifecycle.js"
import { executionJson, type ExecutionRecord, versionOf, viewOf } from "../../ExecutionRecord.js"
import { ATTEMPT_SPAN, ExecutionReports, VERSION_SPAN } from "../../ExecutionReports.js"
import { ExecutionStore } from "../../ExecutionStore.js"
import { IdGenerator } from "../../IdGenerator.js"
import { DeliveryId, type OutboxEntry, WebhookOutbox } from "../../WebhookOutbox.js"

/** Least time between two `output` events, or two `logs` events, of one execution. */
export const THROTTLE_MS = 500

/** How long a follower waits without news before it looks at the store (its run may have ended elsewhere). */
const IDLE_LOOK = Duration.minutes(1)

const iso = (ms: number) => new Date(ms).toISOString()

/** A log line as a `logs` event carries it (`Live.LogLine`). */
interface Line {
  readonly at: number
  readonly level: string
  readonly nodeId: string | null
  readonly message: string
}

/**
 * The body of an event: its `type`, when it happened, the execution as `GET` answers it, and for
 * `logs` the lines. The JSON of `Webhook.WebhookBody`, written directly.
 */
export const eventBody = (
  type: WebhookEvent,
  at: number,
  record: ExecutionRecord,
  lines?: ReadonlyArray<Line>
): string =>
  `{"type":"${type}","timestamp":"${iso(at)}","data":${executionJson(viewOf(record))}${
    lines === undefined
      ? ""
      : `,"logs":${
        JSON.stringify(lines.map((l) => ({ at: iso(l.at), level: l.level, nodeId: l.nodeId, message: l.message })))
      }`
  }}`

/** How many outputs of a record have settled (`completed` or `failed`). */
const settledOf = (record: ExecutionRecord) => record.outputs.filter((o) => o.status !== "pending").length

/** Whether `id` is the event id of a report of `attempt` (`ExecutionReports.eventId`). */
const ofAttempt = (id: number, attempt: number) => Math.floor((id % VERSION_SPAN) / ATTEMPT_SPAN) === attempt

/** One execution followed for its `output` and `logs` events. */
interface Follower {
  readonly attempt: number | undefined
  /** The newest record announced. */
  latest: ExecutionRecord
  /** Whether its reports changed since the last look. */
  logsDirty: boolean
  readonly wake: Queue.Queue<void>
}

/** Follows the runs of this process for their events, until the scope closes. */
export const run = Effect.gen(function*() {
  const events = yield* ExecutionEvents
  const reports = yield* ExecutionReports
  const store = yield* ExecutionStore
  const outbox = yield* WebhookOutbox
  const ids = yield* IdGenerator
  const followers = new Map<ExecutionId, Follower>()
  const fibers = yield* FiberSet.make<void>()
  const fork = yield* FiberSet.runtime(fibers)<never>()

  /** Adds the entry of one event; a storage failure is logged, and the event is not sent. */
  const send = (record: ExecutionRecord, event: WebhookEvent, body: string) =>
    Effect.gen(function*() {
      const at = yield* Clock.currentTimeMillis
      const entry: OutboxEntry = {
        deliveryId: DeliveryId.make(yield* ids.uuid),
        executionId: record.executionId,
        userId: record.userId,
        url: record.webhookUrl ?? "",
        status: "pending",
        nextAttemptAt: at,
        attempts: [],
        createdAt: at,
        event,
        body,
        ...(record.traceParent === undefined ? {} : { traceParent: record.traceParent })
      }
      yield* outbox.add([entry])
    }).pipe(
      Effect.catchTag("StorageError", (error: StorageError) =>
        Effect.logWarning(`webhook ${record.executionId}: its ${event} event could not be stored`, error))
    )

  /** The log lines of `attempt` stored after `afterId`, with the id of the last one. */
  const linesAfter = (executionId: ExecutionId, afterId: number, attempt: number) =>
    Effect.map(reports.after(executionId, afterId), ({ reports: stored }) => {
      const lines: Array<Line> = []
      let lastId = afterId
      for (const { id, report } of stored) {
        if (report._tag !== "Log" || !ofAttempt(id, attempt)) continue
        lines.push(report)
        lastId = id
      }
      return { lines, lastId }
    })

  /**
   * The loop of one follower: at each wake, the events due (each at most once per
   * `THROTTLE_MS`; one held back is sent at the end of its window), until the execution ends and
   * what it changed last is sent.
   */
  const follow = (follower: Follower, wants: ReadonlyArray<WebhookEvent>, shown: number) =>
    Effect.gen(function*() {
      const executionId = follower.latest.executionId
      const attempt = follower.attempt ?? 0
      const wantsOutput = wants.includes("output")
      const wantsLogs = wants.includes("logs")
      let shownSettled = shown
      let lastOutputAt = Number.NEGATIVE_INFINITY
      let lastLogsAt = Number.NEGATIVE_INFINITY
      let lastLogId = 0
      for (;;) {
        const now = yield* Clock.currentTimeMillis
        const record = follower.latest
        const ended = isTerminal(record.status)
        let dueAt: number | undefined
        const settled = settledOf(record)
        if (wantsOutput && settled > shownSettled) {
          if (now >= lastOutputAt + THROTTLE_MS) {
            yield* send(record, "output", eventBody("output", now, record))
            shownSettled = settled
            lastOutputAt = now
          } else dueAt = lastOutputAt + THROTTLE_MS
        }
        // At the end, one more look: a line stored just before it may not have woken this loop yet.
        if (wantsLogs && (follower.logsDirty || ended)) {
          if (now >= lastLogsAt + THROTTLE_MS) {
            follower.logsDirty = false
            const { lastId, lines } = yield* linesAfter(executionId, lastLogId, attempt).pipe(
              Effect.catchTag("StorageError", (error) =>
                Effect.as(
                  Effect.logWarning(`webhook ${executionId}: its log lines could not be read`, error),
                  { lines: [], lastId: lastLogId }
                ))
            )
            if (lines.length > 0) {
              yield* send(record, "logs", eventBody("logs", lines[lines.length - 1]!.at, record, lines))
              lastLogId = lastId
              lastLogsAt = now
            }
          } else dueAt = Math.min(dueAt ?? Number.POSITIVE_INFINITY, lastLogsAt + THROTTLE_MS)
        }
        if (dueAt !== undefined) {
          yield* Effect.sleep(Duration.millis(dueAt - now))
          continue
        }
        if (ended) return
        const woken = yield* Effect.raceFirst(
          Effect.as(Queue.take(follower.wake), true),
          Effect.as(Effect.sleep(IDLE_LOOK), false)
        )
        if (!woken) {
          // Nothing heard for a while: the run may have ended, or moved, in another process.
          const stored = yield* Effect.either(store.get(executionId))
          if (Either.isLeft(stored)) continue
          const found = stored.right
          if (Option.isNone(found) || (found.value.attempt ?? 0) !== attempt) return
          if (isTerminal(found.value.status)) follower.latest = found.value
        }
      }
    })

  /**
   * Starts following `record`'s run for its `output` and `logs` events, in a fiber that does
   * `first` before; `shown` is how many settled outputs its receiver has seen (none: a run taken
   * over shows them all again).
   */
  const startFollowing = (
    record: ExecutionRecord,
    wants: ReadonlyArray<WebhookEvent>,
    shown: number,
    first: Effect.Effect<void> = Effect.void
  ) =>
    Effect.gen(function*() {
      const follower: Follower = {
        attempt: record.attempt,
        latest: record,
        logsDirty: false,
        wake: yield* Queue.sliding<void>(1)
      }
      followers.set(record.executionId, follower)
      const unlisten = wants.includes("logs")
        ? events.unsafeListen(record.executionId, () => {
          follower.logsDirty = true
          Queue.unsafeOffer(follower.wake, undefined)
        })
        : () => {}
      fork(
        Effect.zipRight(first, follow(follower, wants, shown)).pipe(
          Effect.ensuring(Effect.sync(() => {
            unlisten()
            if (followers.get(record.executionId) === follower) followers.delete(record.executionId)
          })),
          Effect.catchAllCause((cause) => Effect.logWarning(`webhook ${record.executionId}: events stopped`, cause))
        )
      )
    })

  /** What an announced record means for the events of its execution. */
  const route = (record: ExecutionRecord): Effect.Effect<void> => {
    const wants = record.webhookEvents
    if (wants === undefined || record.webhookUrl === null || !wants.some((e) => e !== "completed")) return Effect.void
    const follower = followers.get(record.executionId)
    const started = record.status === "running" && versionOf(record.status, record.outputs) === 1
    const follows = wants.includes("output") || wants.includes("logs")
    if (started && (follower === undefined || follower.attempt !== record.attempt)) {
      if (follower !== undefined) followers.delete(record.executionId)
      // Written by a fiber of its own (the follower's, first), so that no announcement waits for a write.
      const start = wants.includes("start")
        ? send(record, "start", eventBody("start", record.startedAt ?? record.createdAt, record))
        : Effect.void
      return follows ? startFollowing(record, wants, 0, start) : Effect.sync(() => fork(start))
    }
    if (follower !== undefined) {
      follower.latest = record
      return Queue.offer(follower.wake, undefined)
    }
    // A run this process took over from another (its start was another's), or ended at once:
    // followed from here, so that what it changes, and its last lines, are sent.
    return follows && record.status !== "queued" ? startFollowing(record, wants, 0) : Effect.void
  }

  const subscription = yield* events.subscribe
  yield* Queue.takeBetween(subscription, 1, Number.MAX_SAFE_INTEGER).pipe(
    Effect.flatMap((records) => Effect.forEach(records, route, { discard: true })),
    Effect.forever,
    Effect.forkScoped
  )
})

/** The events of this process's runs, followed as long as the layer lives (where a worker runs). */
export const layer = Layer.scopedDiscard(run)
