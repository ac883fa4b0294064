/**
 * Core's `WebhookSigner` port on worker threads: webhook signatures (`@noble/ed25519`, the same
 * code as core's in-thread signer) are made by a small pool of workers, so the thread that runs
 * the engine, the dispatcher and the HTTP client does not spend ~150–230 µs of each delivery on
 * one. Requests are batched: those of one turn of the event loop go to a worker in one message,
 * and a worker holds at most `maxBatch` unanswered, so a burst of deliveries costs a few round
 * trips, not one each. A worker answers in order, a few signatures at a time as it makes them,
 * and is sent more while it signs: the deliveries at the head of a burst go on while the rest is
 * signed, and neither thread waits for the other.
 *
 * A worker that dies (crash, `process.exit`, out of memory) or hangs (holds requests without
 * answering any for `batchTimeoutMs`; it is terminated) loses nothing: the requests it held
 * are signed on the calling thread, and the worker is started again on the next request. After
 * `maxRestarts` deaths in a row without an answer in between, its slot gives up and signs on the
 * calling thread; with every slot given up, so does the pool.
 *
 * The worker's script is inline (`new Worker(source, { eval: true })`, compiled from
 * `scripts/signer-worker.mjs`), so the pool runs alike from sources, from `dist/` and inside the
 * bundled `appexec` command. Workers are unreferenced (they never keep a process alive) and are
 * terminated when the layer's scope closes.
 *
 * ```ts
 * AppexecLayer.make().pipe(Layer.provide(NodeWebhookSigner.layer()))
 * ```
 */
import { WebhookSigner } from "@appexec/core"
import { Duration, Effect, type Fiber, FiberId, Layer, Runtime, type Scope } from "effect"
import { availableParallelism } from "node:os"
import { Worker } from "node:worker_threads"
import { source as builtinSource } from "./internal/SignerWorkerSource.js"

const { SignatureFailure } = WebhookSigner

/** How the pool behaves. */
export interface Options {
  /**
   * Worker threads (default 1 where the machine has two cores or more, else 0). With 0, every
   * signature is made on the calling thread: a worker only pays for itself with a core of its own.
   */
  readonly threads?: number
  /** Most signatures a worker holds unanswered, and so most in one message (default 64). */
  readonly maxBatch?: number
  /** Deaths in a row after which a worker slot signs on the calling thread instead (default 3). */
  readonly maxRestarts?: number
  /**
   * How long a worker holding requests may go without answering any before it is taken for hung,
   * terminated (what it held signed in-thread) and started again (default 10 s; time follows the
   * `Clock`).
   */
  readonly batchTimeoutMs?: number
  /** The worker's script (default: the built-in signer). Tests use it to start workers that fail. */
  readonly workerSource?: string
}

/** What the pool did so far (for tests and diagnostics). */
export interface Stats {
  /** Signatures made by workers. */
  readonly inWorkers: number
  /** Signatures made on the calling thread after a worker died or gave up. */
  readonly inThread: number
  /** Messages of requests sent to workers. */
  readonly batches: number
  /** Workers started again after dying. */
  readonly restarts: number
}

/** A pool: the signer, and views for tests. */
export interface Pool {
  readonly signer: WebhookSigner.WebhookSigner["Type"]
  /** The live worker of each slot (`undefined` before the first request or after a death). */
  readonly workers: () => ReadonlyArray<Worker | undefined>
  readonly stats: () => Stats
}

type Done = (result: { readonly signature: string } | { readonly error: string }) => void

interface Request {
  readonly message: Uint8Array
  readonly key: string
  readonly done: Done
}

interface Slot {
  worker: Worker | undefined
  /** The requests sent to the worker and not answered yet, in the order it answers them. */
  pending: Array<Request>
  /** What terminates the worker if it holds requests and answers none in time. */
  watchdog: Fiber.RuntimeFiber<void> | undefined
  /** Deaths since the last answer. */
  deaths: number
  /** Given up: signs on the calling thread. */
  retired: boolean
}

/** Signs on this thread: the fallback of a dead worker. */
const signHere = (request: Request) => {
  const result = WebhookSigner.signNow(request.message, request.key)
  request.done(result._tag === "Right" ? { signature: result.right } : { error: result.left })
}

/** The pool, its workers terminated when the scope closes. */
export const makePool = (options: Options = {}): Effect.Effect<Pool, never, Scope.Scope> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const warn = (text: string) => Runtime.runFork(runtime)(Effect.logWarning(text))
    const threads = Math.max(0, Math.floor(options.threads ?? (availableParallelism() >= 2 ? 1 : 0)))
    const maxBatch = Math.max(1, Math.floor(options.maxBatch ?? 64))
    const maxRestarts = Math.max(0, Math.floor(options.maxRestarts ?? 3))
    const source = options.workerSource ?? builtinSource
    const slots: Array<Slot> = Array.from({ length: threads }, () => ({
      worker: undefined,
      pending: [],
      watchdog: undefined,
      deaths: 0,
      retired: false
    }))
    const batchTimeout = Duration.millis(Math.max(1, options.batchTimeoutMs ?? 10_000))
    const fork = Runtime.runFork(runtime)
    const stopWatchdog = (slot: Slot) => {
      slot.watchdog?.unsafeInterruptAsFork(FiberId.none)
      slot.watchdog = undefined
    }
    let queue: Array<Request> = []
    let flushScheduled = false
    let closed = false
    let stats = { inWorkers: 0, inThread: 0, batches: 0, restarts: 0 }

    const fallBack = (requests: ReadonlyArray<Request>) => {
      stats = { ...stats, inThread: stats.inThread + requests.length }
      for (const request of requests) signHere(request)
    }

    const died = (slot: Slot, worker: Worker, why: string) => {
      if (slot.worker !== worker) return
      slot.worker = undefined
      stopWatchdog(slot)
      const lost = slot.pending
      slot.pending = []
      if (closed) return fallBack(lost)
      slot.deaths += 1
      if (slot.deaths > maxRestarts) {
        slot.retired = true
        warn(`webhook signer worker died ${slot.deaths} times in a row (${why}); its signatures are made in-thread`)
      } else {
        warn(`webhook signer worker died (${why}); it is started again`)
      }
      fallBack(lost)
      flush()
    }

    const start = (slot: Slot): Worker => {
      const worker = new Worker(source, { eval: true })
      worker.unref()
      worker.on("message", (signatures: ReadonlyArray<string | { readonly error: string }>) => {
        if (slot.worker !== worker) return
        // The answers of the oldest requests it holds.
        const batch = slot.pending.splice(0, signatures.length)
        stopWatchdog(slot)
        if (slot.pending.length > 0) watch(slot, worker)
        slot.deaths = 0
        stats = { ...stats, inWorkers: stats.inWorkers + batch.length }
        batch.forEach((request, i) => {
          const signature = signatures[i]
          request.done(
            typeof signature === "string"
              ? { signature }
              : { error: signature?.error ?? "the signer worker answered no signature" }
          )
        })
        flush()
      })
      worker.on("error", (error) => died(slot, worker, error.message))
      worker.on("messageerror", (error) => died(slot, worker, error.message))
      worker.on("exit", (code) => died(slot, worker, `exit code ${code}`))
      if (slot.deaths > 0) stats = { ...stats, restarts: stats.restarts + 1 }
      slot.worker = worker
      return worker
    }

    /** Terminates `worker` unless it answers within the time limit (its requests are signed in-thread on exit). */
    const watch = (slot: Slot, worker: Worker) => {
      slot.watchdog = fork(
        Effect.sleep(batchTimeout).pipe(
          Effect.zipRight(Effect.sync(() => {
            if (slot.worker !== worker || slot.pending.length === 0) return
            warn(`webhook signer worker gave no answer within ${Duration.format(batchTimeout)}; it is terminated`)
            void worker.terminate()
          }))
        )
      )
    }

    /** Sends waiting requests to every worker with room for them. */
    function flush() {
      flushScheduled = false
      for (const slot of slots) {
        if (queue.length === 0) return
        const room = maxBatch - slot.pending.length
        if (slot.retired || room <= 0) continue
        const batch = queue.length <= room ? queue : queue.slice(0, room)
        queue = queue.length <= room ? [] : queue.slice(room)
        const worker = slot.worker ?? start(slot)
        for (const request of batch) slot.pending.push(request)
        stats = { ...stats, batches: stats.batches + 1 }
        worker.postMessage({ keys: batch.map((r) => r.key), messages: batch.map((r) => r.message) })
        if (slot.watchdog === undefined) watch(slot, worker)
      }
      // Every slot given up: nothing will take the rest.
      if (queue.length > 0 && slots.every((slot) => slot.retired)) {
        const rest = queue
        queue = []
        fallBack(rest)
      }
    }

    const submit = (request: Request) => {
      if (closed || slots.every((slot) => slot.retired)) return fallBack([request])
      queue.push(request)
      // Requests of the same turn of the event loop go together.
      if (!flushScheduled && slots.some((slot) => !slot.retired && slot.pending.length < maxBatch)) {
        flushScheduled = true
        setImmediate(flush)
      }
    }

    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        closed = true
        const rest = queue
        queue = []
        fallBack(rest)
        await Promise.all(slots.map((slot) => {
          const worker = slot.worker
          if (worker === undefined) return undefined
          // In-flight requests are answered in-thread by the exit handler.
          return worker.terminate()
        }))
      })
    )

    const signer: WebhookSigner.WebhookSigner["Type"] = {
      // Each message is a request of its own (a worker's batch takes them together); the call
      // answers once all are signed, with the first failure if any.
      sign: (messages, key) =>
        Effect.async((resume) => {
          const signatures = new Array<string>(messages.length)
          let left = messages.length
          let failure: string | undefined
          if (left === 0) return resume(Effect.succeed(signatures))
          messages.forEach((message, i) =>
            submit({
              message,
              key,
              done: (result) => {
                if ("signature" in result) signatures[i] = result.signature
                else failure ??= result.error
                left -= 1
                if (left > 0) return
                resume(
                  failure === undefined
                    ? Effect.succeed(signatures)
                    : Effect.fail(new SignatureFailure({ reason: failure }))
                )
              }
            })
          )
        })
    }
    return { signer, workers: () => slots.map((slot) => slot.worker), stats: () => stats }
  })

/** `WebhookSigner` on a pool of worker threads. */
export const layer = (options: Options = {}): Layer.Layer<WebhookSigner.WebhookSigner> =>
  Layer.scoped(WebhookSigner.WebhookSigner, Effect.map(makePool(options), (pool) => pool.signer))
