/**
 * The worker: takes executions from the queue under a lease, renews the lease while the workflow
 * runs, and records the outcome through the status state machine. A lost worker's execution is
 * run again once its lease expires, up to `maxAttempts` claims, then failed. Stopping the worker
 * (closing its scope) stops taking work, waits up to `drainTimeoutMs` for running executions,
 * then interrupts them and releases their leases so another worker takes them at once.
 */
import type { OutputType } from "@appexec/api/Execution"
import type { ExecutionId } from "@appexec/api/Ids"
import { Cause, Deferred, Duration, Effect, Either, Fiber, FiberMap, Layer, Option, Queue } from "effect"
import { AppexecConfig, millis } from "../AppexecConfig.js"
import { recordFinished } from "../AppexecMetrics.js"
import { LeaseLost } from "../Errors.js"
import { ExecutionEvents } from "../ExecutionEvents.js"
import { type ExecutionEvent, failNow, isTerminal, transition } from "../ExecutionLifecycle.js"
import { type Claim, ExecutionQueue, type Lease } from "../ExecutionQueue.js"
import type { ExecutionRecord } from "../ExecutionRecord.js"
import { ExecutionStore } from "../ExecutionStore.js"
import { IdGenerator } from "../IdGenerator.js"
import * as TraceContext from "../TraceContext.js"
import { DeliveryId, entryFor } from "../WebhookOutbox.js"
import { AppCatalog } from "./AppCatalog.js"
import { CANCELED_MESSAGE, Cancellations } from "./Cancellations.js"
import { runWorkflow } from "./WorkflowRunner.js"

const formatDuration = (ms: number) => Duration.format(Duration.millis(ms))

/** Runs one claimed execution to its end, or gives it up when the lease is lost. */
const makeProcess = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const queue = yield* ExecutionQueue
  const store = yield* ExecutionStore
  const catalog = yield* AppCatalog
  const events = yield* ExecutionEvents
  const ids = yield* IdGenerator
  const cancellations = yield* Cancellations
  const now = Effect.clockWith((clock) => clock.currentTimeMillis)

  const apply = (record: ExecutionRecord, event: ExecutionEvent) =>
    Either.match(transition(record, event), { onLeft: Effect.die, onRight: Effect.succeed })

  const save = (record: ExecutionRecord, lease: Lease) =>
    Effect.gen(function*() {
      const terminal = isTerminal(record.status)
      const outbox = terminal && record.webhookUrl !== null
        ? entryFor(record, DeliveryId.make(yield* ids.uuid), yield* now, yield* TraceContext.current)
        : undefined
      yield* store.save(record, lease, outbox)
      if (terminal) yield* recordFinished(record)
      yield* events.publish(record)
      yield* Effect.logDebug(`execution ${record.executionId} ${record.status}`)
      return record
    })

  const fail = (
    record: ExecutionRecord,
    lease: Lease,
    errorMessage: string,
    outputTypes: Readonly<Record<string, Exclude<OutputType, "pending">>> = {}
  ) =>
    Effect.gen(function*() {
      const failed = yield* Either.match(failNow(record, yield* now, errorMessage, outputTypes), {
        onLeft: Effect.die,
        onRight: Effect.succeed
      })
      return yield* save(failed, lease)
    })

  /**
   * The watchdog of a run: renews the lease every `renewEveryMs` and completes with none when
   * `timeoutMs` have passed; fails with `LeaseLost` when the lease is gone. One fiber and one
   * timer at a time, raced against the workflow.
   */
  const watchdog = (initial: Lease, timeoutMs: number): Effect.Effect<Option.Option<never>, LeaseLost> =>
    Effect.flatMap(now, (startedAt) => {
      const deadline = startedAt + timeoutMs
      const loop = (lease: Lease): Effect.Effect<Option.Option<never>, LeaseLost> =>
        Effect.flatMap(now, (at) => {
          if (at >= deadline) return Effect.succeedNone
          const wait = Math.min(millis(config.renewEvery), deadline - at)
          return Effect.sleep(Duration.millis(wait)).pipe(
            Effect.zipRight(
              Effect.flatMap(now, (woke) =>
                woke >= deadline
                  ? Effect.succeedNone
                  : queue.renew(lease, millis(config.lease)).pipe(
                    Effect.catchTag("StorageError", (error) =>
                      // If the lease would run out before the next try, another worker may claim the
                      // execution meanwhile: stop now rather than run beside a second copy.
                      woke + millis(config.renewEvery) >= lease.expiresAt
                        ? Effect.logWarning(
                          "lease renewal failed and the lease runs out before the next try; stopping the run",
                          error
                        ).pipe(
                          Effect.zipRight(Effect.fail(new LeaseLost({ executionId: lease.executionId })))
                        )
                        : Effect.logWarning("lease renewal failed; retrying", error).pipe(Effect.as(lease))),
                    Effect.flatMap(loop)
                  ))
            )
          )
        })
      return loop(initial)
    })

  return Effect.fn("Worker.process")(({ execution, lease }: Claim) =>
    Effect.gen(function*() {
      if (lease.attempt > config.maxAttempts) {
        return yield* fail(
          execution,
          lease,
          `The execution was abandoned: its worker stopped ${
            lease.attempt - 1
          } times before finishing (at most ${config.maxAttempts} attempts).`
        )
      }
      const loaded = yield* catalog.load(execution.workflowId).pipe(Effect.either)
      if (Either.isLeft(loaded)) {
        yield* Effect.logError(`execution ${execution.executionId}: workflow cannot be loaded`, loaded.left)
        return yield* fail(execution, lease, "The app's workflow could not be loaded.")
      }
      const { app } = loaded.right
      const started = execution.status === "queued"
        ? yield* save(yield* apply(execution, { _tag: "Started", at: yield* now }), lease)
        : execution
      const timeoutMs = (app.definition.timeoutSeconds ?? 0) * 1000 || millis(config.defaultTimeout)
      const outputTypes = Object.fromEntries(app.outputs.map((o) => [o.id, o.type]))
      // A cancel request (from this process, or seen in the store) interrupts the run where it is.
      const canceled = yield* cancellations.register(started.executionId)
      const result = yield* runWorkflow(
        app,
        started.inputs,
        { executionId: started.executionId, appId: started.appId, workspaceId: started.workspaceId },
        config.nodeConcurrency
      ).pipe(
        Effect.map((ran) => Either.right(ran)),
        Effect.raceFirst(Effect.as(watchdog(lease, timeoutMs), Either.left("timed out" as const))),
        Effect.raceFirst(Effect.as(Deferred.await(canceled), Either.left("canceled" as const)))
      )
      const at = yield* now
      const stopped = (errorMessage: string): ExecutionEvent => ({
        _tag: "Failed",
        at,
        errorMessage,
        produced: [],
        outputErrors: {},
        outputTypes
      })
      const event: ExecutionEvent = Either.match(result, {
        onLeft: (why) =>
          why === "canceled"
            ? stopped(CANCELED_MESSAGE)
            : stopped(`The execution timed out after ${formatDuration(timeoutMs)}.`),
        onRight: (r) =>
          Option.match(r.firstError, {
            onNone: () => ({ _tag: "Completed", at, produced: r.produced }),
            onSome: (errorMessage) => ({
              _tag: "Failed",
              at,
              errorMessage,
              produced: r.produced,
              outputErrors: r.outputErrors,
              outputTypes
            })
          })
      })
      return yield* save(yield* apply(started, event), lease)
    }).pipe(
      Effect.scoped,
      Effect.catchTag("LeaseLost", () =>
        Effect.logWarning(`execution ${execution.executionId}: lease lost; another worker owns it now`)),
      Effect.catchTag("StorageError", (error) =>
        Effect.logError(
          `execution ${execution.executionId}: storage failed; the lease will expire and it runs again`,
          error
        )),
      // A defect is a bug: log it for the operator and fail the execution, rather than leave it
      // running until its lease expires and run it again into the same bug.
      Effect.catchAllDefect((defect) =>
        Effect.gen(function*() {
          yield* Effect.logError(
            `execution ${execution.executionId}: unexpected error in the worker`,
            Cause.die(defect)
          )
          const current = yield* store.get(execution.executionId)
          if (Option.isSome(current) && !isTerminal(current.value.status)) {
            yield* fail(current.value, lease, "The execution failed unexpectedly.")
          }
        }).pipe(
          Effect.catchAllCause((cause) =>
            Effect.logError(
              `execution ${execution.executionId}: could not record the failure; its lease will expire`,
              cause
            )
          )
        )
      ),
      Effect.onInterrupt(() =>
        queue.release(lease).pipe(Effect.ignoreLogged)
      ),
      Effect.annotateLogs({ executionId: execution.executionId, attempt: lease.attempt })
    )
  )
})

/** Most executions one claim takes. */
const CLAIM_BATCH = 32

/**
 * The worker loop as a scoped effect: it runs until the scope closes. One loop claims as many
 * executions as there are free slots (up to `CLAIM_BATCH`) under one write, and runs each in a
 * fiber of its own, registered by execution id in `running`.
 */
export const run = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const queue = yield* ExecutionQueue
  const ids = yield* IdGenerator
  const workerId = yield* ids.uuid
  const process = yield* makeProcess
  // The running executions of this worker by id: interrupting one's fiber stops its run.
  const running = yield* FiberMap.make<ExecutionId, unknown, never>()
  let free = config.workerConcurrency
  const slotFreed = yield* Queue.sliding<void>(1)
  /** Open while this worker runs at least one execution (a slot is taken). */
  const busy = yield* Effect.makeLatch(false)
  const giveBack = Effect.suspend(() => {
    free += 1
    return Effect.zipRight(
      free === config.workerConcurrency ? busy.close : Effect.void,
      Queue.offer(slotFreed, undefined)
    )
  })
  const claimOptions = (limit: number) => ({
    limit,
    maxRunningPerWorkspace: config.maxRunningPerWorkspace
  })

  // Idle until work may be claimable: an insert or release in this process, a finished run here
  // (a workspace under its cap again), or the poll interval for work written by other processes.
  const idle = Effect.raceAll([queue.awaitWork, Queue.take(slotFreed), Effect.sleep(config.pollInterval)])
  const step = Effect.gen(function*() {
    while (free === 0) yield* Queue.take(slotFreed)
    const wanted = Math.min(free, CLAIM_BATCH)
    // Claiming and handing each claim to its fiber cannot be split by an interruption, or a
    // claim would sit unworked until its lease expired.
    const claimed = yield* Effect.uninterruptible(
      queue.claimBatch(workerId, millis(config.lease), claimOptions(wanted)).pipe(
        Effect.catchTag(
          "StorageError",
          (error) => Effect.logError("claim failed", error).pipe(Effect.as([] as ReadonlyArray<Claim>))
        ),
        Effect.tap((claims) =>
          Effect.forEach(claims, (claim) => {
            free -= 1
            return Effect.zipRight(
              busy.open,
              FiberMap.run(
                running,
                claim.execution.executionId,
                Effect.interruptible(
                  process(claim).pipe(
                    TraceContext.continueFrom(claim.execution.traceParent),
                    Effect.ensuring(giveBack)
                  )
                )
              )
            )
          }, { discard: true })
        )
      )
    )
    if (claimed.length < wanted) yield* idle
  })
  const loop = yield* Effect.forkScoped(Effect.whileLoop({ while: () => true, body: () => step, step: () => {} }))

  // Cancels made by other processes reach this worker through the store: while it runs something
  // (`busy` is open), it asks every `cancelCheckInterval` which of its executions to cancel.
  const cancellations = yield* Cancellations
  const checkCancels = Effect.gen(function*() {
    yield* busy.await
    yield* Effect.sleep(config.cancelCheckInterval)
    if ((yield* FiberMap.size(running)) === 0) return
    const requested = yield* queue.cancelRequested(workerId)
    yield* Effect.forEach(requested, cancellations.signal, { discard: true })
  }).pipe(Effect.catchTag("StorageError", (error) => Effect.logWarning("cancel check failed", error)))
  const cancelChecks = yield* Effect.forkScoped(Effect.forever(checkCancels))

  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      yield* Fiber.interrupt(loop)
      yield* Fiber.interrupt(cancelChecks)
      const size = yield* FiberMap.size(running)
      if (size > 0 && millis(config.drainTimeout) > 0) {
        yield* Effect.logInfo(`worker stopping: waiting for ${size} running execution(s)`)
        // Finalizers run uninterruptibly: only an interruptible wait can be cut short by the timeout.
        yield* Effect.interruptible(FiberMap.awaitEmpty(running)).pipe(
          Effect.timeoutOption(config.drainTimeout)
        )
      }
      yield* FiberMap.clear(running)
    })
  )
  yield* Effect.logDebug(`worker ${workerId} started`)
})

/** A worker that lives as long as the layer. */
export const layer = Layer.scopedDiscard(run)
