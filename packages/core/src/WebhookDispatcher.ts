/**
 * The webhook dispatcher: delivers the entries of the durable outbox (docs/api.md#webhooks, docs/api.md). Each
 * attempt is one POST of `{ data: <execution> }` (or of the body of another event,
 * docs/webhooks.md#events), signed afresh with its own timestamp in both schemes (the interface's
 * and Standard Webhooks', `WebhookSignature`); any 2xx
 * within `webhookTimeoutMs` delivers it, anything else (redirects included) is a failed attempt,
 * retried after each of `webhookRetryDelaysMs` in turn. A refused address or an invalid URL is not
 * retried, nor is the one attempt of a redelivery (`WebhookOutbox.redeliver`). Every attempt is
 * recorded. Claims on due entries are leased in the outbox, so two dispatchers never send the same
 * attempt, and an attempt cut short by a crash is sent again once its lease
 * (`webhookTimeoutMs + webhookClaimMarginMs`) runs out. Up to `webhookConcurrency`
 * deliveries are under way at once, each in its own slot of the claim loop it shares with the
 * worker (`internal/engine/ClaimLoop.ts`). The loop wakes when an execution of this process ends with a
 * webhook and polls for the rest (entries written by other processes, retries coming due).
 * A body is masked by the `Redactor` before it is signed and sent (its execution was masked
 * before it was stored; this covers a value registered since, in this process).
 */
import { Envelope } from "@appexec/api/Envelope"
import { Execution } from "@appexec/api/Execution"
import { Chunk, Clock, Duration, Effect, Fiber, Layer, LogLevel, Metric, Option, Queue } from "effect"
import { AppexecConfig, millis } from "./AppexecConfig.js"
import { webhookOutcome } from "./AppexecMetrics.js"
import type { StorageError } from "./Errors.js"
import { ExecutionEvents } from "./ExecutionEvents.js"
import { isTerminal } from "./ExecutionLifecycle.js"
import { executionJson, type ExecutionView } from "./ExecutionRecord.js"
import { ExecutionStore } from "./ExecutionStore.js"
import * as ClaimLoop from "./internal/engine/ClaimLoop.js"
import { nextTurn } from "./internal/engine/NextTurn.js"
import { OutboundHttp, type OutboundResponse } from "./OutboundHttp.js"
import { Redactor } from "./Redactor.js"
import { Shutdown } from "./Shutdown.js"
import { SigningKeys } from "./SigningKeys.js"
import * as TraceContext from "./TraceContext.js"
import { type DeliveryAttempt, type OutboxEntry, WebhookOutbox } from "./WebhookOutbox.js"
import { attemptMessages, names, STANDARD_HEADERS, standardSignature, timestampOf } from "./WebhookSignature.js"

/** The webhook body schema: the polling response (docs/api.md#webhooks). */
export const WebhookBody = Envelope(Execution)

/** Entries taken from the outbox per pass. */
const BATCH = 32

const encoder = new TextEncoder()

/**
 * The webhook body of an execution, from its view as stored (`ExecutionStore.getView`): the JSON
 * that `WebhookBody` encodes, the outputs spliced in as stored (`executionJson`), nothing parsed.
 */
export const bodyOfView = (view: ExecutionView): string => `{"data":${executionJson(view)}}`

/**
 * The body of the completion event of an execution started with `webhookEvents`
 * (docs/webhooks.md#events): `bodyOfView` with the event's `type` and `timestamp` (its end) first.
 */
export const completedBodyOfView = (view: ExecutionView): string =>
  `{"type":"completed","timestamp":"${new Date(view.completedAt ?? view.createdAt).toISOString()}","data":${
    executionJson(view)
  }}`

/** What became of one attempt. */
export type Outcome =
  | { readonly _tag: "Delivered"; readonly status: number }
  | {
    readonly _tag: "Failed"
    readonly status: number | null
    readonly error: string
    readonly retry: boolean
    /** The failure was ours, not the receiver's: the body could not be signed, storage failed. */
    readonly internal?: boolean
  }

/** Classifies a receiver's answer: 2xx delivers; redirects and every other status fail. */
export const outcomeOf = (response: OutboundResponse): Outcome => {
  const status = response.status
  if (status >= 200 && status < 300) return { _tag: "Delivered", status }
  if (status >= 300 && status < 400) {
    const location = response.headers["location"]
    return {
      _tag: "Failed",
      status,
      error: `The receiver answered ${status}${
        location === undefined ? "" : ` to ${location}`
      }; redirects are not followed.`,
      retry: true
    }
  }
  return { _tag: "Failed", status, error: `The receiver answered ${status}.`, retry: true }
}

/** What to store after attempt number `attempt` (1-based): final status or the time of the next try. */
export const nextStep = (
  outcome: Outcome,
  attempt: number,
  at: number,
  retryDelaysMs: ReadonlyArray<number>
): { readonly retryAt: number } | { readonly final: "delivered" | "failed" } => {
  if (outcome._tag === "Delivered") return { final: "delivered" }
  const delay = retryDelaysMs[attempt - 1]
  return !outcome.retry || delay === undefined ? { final: "failed" } : { retryAt: at + delay }
}

/** The outcome of an attempt whose execution no longer exists. */
const gone: Outcome = { _tag: "Failed", status: null, error: "The execution no longer exists.", retry: false }

/** The outcome of an attempt that storage cut short: tried again. */
const internalFailure = (error: StorageError): Outcome => ({
  _tag: "Failed",
  status: null,
  error: `Internal error: ${error.message}.`,
  retry: true,
  internal: true
})

/** The log annotations of a delivery. */
const annotationsOf = (entry: OutboxEntry) => ({ executionId: entry.executionId, deliveryId: entry.deliveryId })

/**
 * Builds the dispatcher: `claim` takes due entries, `deliver` sends one claimed entry,
 * `dispatchDue` claims the due entries and waits for their delivery (one pass, for tests and benchmarks).
 */
export const make = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const outbox = yield* WebhookOutbox
  const store = yield* ExecutionStore
  const keys = yield* SigningKeys
  const http = yield* OutboundHttp
  const headerNames = names(config.webhookBrand)
  const timeoutMs = millis(config.webhookTimeout)
  const redactor = yield* Redactor

  /**
   * The body of an entry: the one an event was made with, else the execution as stored now (the
   * completion webhook, with its `type` when the execution asked for events); none when the
   * execution no longer exists.
   */
  const bodyOf = (entry: OutboxEntry): Effect.Effect<Option.Option<string>, StorageError> =>
    entry.body !== undefined
      ? Effect.succeed(Option.some(entry.body))
      : Effect.map(
        store.getView(entry.executionId),
        Option.map((view) => entry.event === undefined ? bodyOfView(view) : completedBodyOfView(view))
      )

  /** Sends one attempt for a claimed entry and returns its outcome. */
  const attempt = (entry: OutboxEntry): Effect.Effect<Outcome, StorageError> =>
    Effect.flatMap(bodyOf(entry), (body) => {
      if (Option.isNone(body)) return Effect.succeed(gone)
      const rawBody = encoder.encode(redactor.text(body.value))
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const timestamp = timestampOf(now)
        // Both signatures of the attempt in one call: the interface's, then Standard Webhooks'.
        const messages = attemptMessages(entry.deliveryId, timestamp, rawBody)
        return Effect.flatMap(keys.signAll(messages), ({ kid, signatures }) =>
          Effect.match(
            http.request({
              method: "POST",
              url: entry.url,
              headers: {
                "content-type": "application/json",
                "user-agent": "appexec-webhooks/1",
                [headerNames.signature]: signatures[0]!,
                [headerNames.timestamp]: timestamp,
                [headerNames.requestId]: entry.executionId,
                [headerNames.userId]: entry.userId,
                [headerNames.keyId]: kid,
                [STANDARD_HEADERS.id]: entry.deliveryId,
                [STANDARD_HEADERS.timestamp]: timestamp,
                [STANDARD_HEADERS.signature]: standardSignature(signatures[1]!)
              },
              body: rawBody,
              timeoutMs
            }),
            {
              onSuccess: outcomeOf,
              onFailure: (failure): Outcome => ({
                _tag: "Failed",
                status: null,
                error: failure.message,
                retry: failure.reason !== "address_not_allowed" && failure.reason !== "invalid_url"
              })
            }
          ))
      })
    })

  // A span per attempt only when spans go somewhere: the default tracer keeps them to itself.
  const traced = yield* TraceContext.spansExported
  const retryDelaysMs = config.webhookRetryDelays.map(millis)

  /** Records the outcome of attempt `number` of a claimed entry, begun at `at`, and logs it. */
  const record = (entry: OutboxEntry, at: number, outcome: Outcome): Effect.Effect<void, StorageError> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const number = entry.attempts.length + 1
      // A redelivery is one attempt: no retry follows it.
      const next = nextStep(outcome, number, now, entry.redelivery === true ? [] : retryDelaysMs)
      const recorded: DeliveryAttempt = {
        at,
        statusCode: outcome.status,
        error: outcome._tag === "Delivered" ? null : outcome.error
      }
      const counted = Metric.increment(
        outcome._tag === "Delivered"
          ? webhookOutcome.delivered
          : "retryAt" in next
          ? webhookOutcome.retrying
          : webhookOutcome.failed
      )
      const stored = Effect.zipRight(counted, outbox.recordAttempt(entry, recorded, next))
      const annotated = traced
        ? Effect.zipRight(
          Effect.annotateCurrentSpan({
            "appexec.webhook.attempt": number,
            "appexec.webhook.outcome": outcome._tag,
            ...(outcome.status === null ? {} : { "http.response.status_code": outcome.status })
          }),
          stored
        )
        : stored
      // Severity for an operator's alerts: ours (signing, storage) an error, giving up a warning.
      const level = outcome._tag === "Failed" && outcome.internal === true
        ? LogLevel.Error
        : "final" in next && next.final === "failed"
        ? LogLevel.Warning
        : LogLevel.Info
      // The completion webhook is named as ever; another event by its type.
      const name = entry.event === undefined || entry.event === "completed"
        ? `webhook ${entry.executionId}`
        : `webhook ${entry.executionId} ${entry.event}`
      return Effect.flatMap(annotated, (current) =>
        current
          ? Effect.logWithLevel(
            level,
            `${name} attempt ${number}: ${
              // The error is a sentence; its full stop gives way to what follows.
              outcome._tag === "Delivered" ? `delivered (${outcome.status})` : outcome.error.replace(/\.$/, "")}${
              "retryAt" in next
                ? `; next attempt in ${Duration.format(Duration.millis(next.retryAt - at))}`
                : next.final === "failed"
                ? "; giving up"
                : ""
            }`
          )
          : Effect.logWarning(
            `${name} attempt ${number} not recorded: its claim ran out and another dispatcher took the delivery over`
          ))
    })

  /**
   * Sends one attempt of a claimed entry and records it. Its logs carry the annotations of the
   * fiber it runs in: `run` starts each delivery in a fiber annotated with the entry's ids.
   */
  const attemptAndRecord = (entry: OutboxEntry): Effect.Effect<void> =>
    Effect.flatMap(Clock.currentTimeMillis, (at) =>
      attempt(entry).pipe(
        Effect.catchTag("StorageError", (error) => Effect.succeed(internalFailure(error))),
        Effect.flatMap((outcome) => record(entry, at, outcome))
      )).pipe(
        Effect.catchTag("StorageError", (error) =>
          Effect.logError(
            `webhook ${entry.executionId}: attempt not recorded; it is retried when its claim expires`,
            error
          ))
      )
  const deliverAttempt = traced ? Effect.fn("WebhookDispatcher.deliver")(attemptAndRecord) : attemptAndRecord

  /** `deliver` without the log annotations, for a fiber that carries them already. */
  const send = (entry: OutboxEntry) =>
    traced ? deliverAttempt(entry).pipe(TraceContext.continueFrom(entry.traceParent)) : deliverAttempt(entry)

  /** Sends one attempt of a claimed entry and records it, in the trace of the run that finished the execution. */
  const deliver = (entry: OutboxEntry) => Effect.annotateLogs(send(entry), annotationsOf(entry))

  /** Claims up to `limit` due entries; none when the claim fails (it is logged and tried again later). */
  const claim = (limit: number) =>
    outbox
      .claimDue(limit, millis(config.webhookTimeout) + millis(config.webhookClaimMargin))
      .pipe(
        Effect.catchTag("StorageError", (error) =>
          Effect.logError("webhook claim failed", error).pipe(Effect.as([] as ReadonlyArray<OutboxEntry>)))
      )

  /** Claims the due entries and delivers them; returns how many were claimed. */
  const dispatchDue = Effect.gen(function*() {
    const due = yield* claim(BATCH)
    yield* Effect.forEach(due, deliver, { concurrency: config.webhookConcurrency, discard: true })
    return due.length
  })

  return { claim, deliver, send, dispatchDue } as const
})

/**
 * The dispatcher loop as a scoped effect: it runs until the scope closes. Its claim loop (the
 * worker's, `ClaimLoop`) claims as many due entries as there are free delivery slots (at most a
 * batch), and sends each in a fiber of its own; a receiver that takes its whole time limit holds
 * one slot, not the others. Closing the scope stops the claims and waits, at most a webhook's time
 * limit (or until the process is hurried), for the deliveries it claimed to go out.
 */
export const run = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const events = yield* ExecutionEvents
  const { claim, send } = yield* make
  const wake = yield* Queue.sliding<void>(1)

  const subscription = yield* events.subscribe
  // Whatever piled up is looked at in one go: one wake-up for a burst of transitions.
  yield* Queue.takeBetween(subscription, 1, Number.MAX_SAFE_INTEGER).pipe(
    Effect.flatMap((records) =>
      Chunk.some(records, (r) => isTerminal(r.status) && r.webhookUrl !== null)
        ? Queue.offer(wake, undefined)
        : Effect.void
    ),
    Effect.forever,
    Effect.forkScoped
  )

  const poll = Effect.sleep(Duration.millis(millis(config.webhookPollInterval)))
  // Also woken by the outbox when another process may have added a due entry.
  const awaitDue = (yield* WebhookOutbox).awaitDue
  const idle = Effect.raceAll([Queue.take(wake), poll, ...(awaitDue === undefined ? [] : [awaitDue])])
  const loop = yield* ClaimLoop.make<OutboxEntry>({
    slots: config.webhookConcurrency,
    batch: BATCH,
    claim,
    work: (entry) => ({ effect: send(entry) }),
    annotations: annotationsOf,
    idle: () => idle,
    // The other answers of this turn of the event loop free their slots too: one claim for all.
    gather: nextTurn
  })
  // A stopping dispatcher claims no more and lets what it claimed go out (the deliveries under way,
  // and those claimed ahead of need): at most a webhook's time limit, less when the process is
  // hurried. Left unsent, they would wait for their claim to run out before another dispatcher
  // could take them.
  const shutdown = yield* Effect.serviceOption(Shutdown)
  yield* Effect.addFinalizer(() =>
    Effect.zipRight(
      loop.stop,
      Effect.flatMap(
        // A fiber of its own, interruptible: this finalizer may run in a fiber interrupted already.
        Effect.forkDaemon(Effect.interruptible(Effect.raceAll([
          loop.awaitEmpty,
          Effect.sleep(Duration.millis(millis(config.webhookTimeout))),
          ...Option.match(shutdown, { onNone: () => [], onSome: (s) => [s.hurried] })
        ]))),
        Fiber.join
      )
    )
  )
  yield* Effect.logDebug("webhook dispatcher started")
})

/** A dispatcher that lives as long as the layer. */
export const layer = Layer.scopedDiscard(run)
