/**
 * The worker threads that read text, so that the thread that runs the engine and answers HTTP
 * never does: at most `threads` (`OcrSettings`), each started when a reading needs one (Tesseract
 * loaded in about a tenth of a second, a language on its first reading), reused by the readings
 * that follow, and ended once unused for `idleTimeout`. Readings beyond `threads` wait in order
 * (effect's `Pool`). A reading that fails, takes longer than `timeout` or is interrupted (its
 * execution canceled or stopped) ends its thread, since Tesseract cannot be stopped inside a
 * reading; the next reading starts a fresh one, so the pool stays whole.
 *
 * ```ts
 * OcrPool.layer.pipe(Layer.provide(OcrSettings.layer({ threads: 2 })))
 * ```
 */
import { Context, Duration, Effect, Exit, Layer, Pool, Runtime, type Stream, SubscriptionRef } from "effect"
import * as OcrThread from "./internal/OcrThread.js"
import { enginePath, type Language } from "./Languages.js"
import { OcrError } from "./OcrError.js"
import { OcrSettings } from "./OcrSettings.js"
import { type FoundLine, parseTsv } from "./Reading.js"

/** An image as the threads read it: 8-bit grey levels, row by row, `width` × `height` bytes. */
export type GreyImage = OcrThread.GreyImage

/** What the pool does now and did so far (for tests, benchmarks and diagnostics). */
export interface Stats {
  /** Threads running now (reading or idle). */
  readonly live: number
  /** Readings on a thread now. */
  readonly reading: number
  /** Readings waiting for a thread. */
  readonly waiting: number
  /** Threads started so far. */
  readonly started: number
  /** Threads ended so far because their reading failed, timed out or was interrupted. */
  readonly stopped: number
}

/** How a reading is asked for. */
export interface ReadOptions {
  readonly language: Language
  /** Told the fraction of the image read (0–1) as the reading goes; it should not fail. */
  readonly onProgress?: (fraction: number) => Effect.Effect<void>
}

/** The OCR worker threads. */
export class OcrPool extends Context.Tag("@appexec/nodes-ocr/OcrPool")<OcrPool, {
  /**
   * The lines found in `image`, every word with its confidence, once a thread is free. Fails with
   * `OcrError` (the engine failed, or `timeout` passed on the thread); interrupted, it ends the
   * thread that was reading.
   */
  readonly read: (image: GreyImage, options: ReadOptions) => Effect.Effect<ReadonlyArray<FoundLine>, OcrError>
  /** What the pool does now and did so far. */
  readonly stats: Effect.Effect<Stats>
  /** The stats at each change, starting with the current ones. */
  readonly changes: Stream.Stream<Stats>
}>() {}

const none: Stats = { live: 0, reading: 0, waiting: 0, started: 0, stopped: 0 }

/** The pool, with threads as `OcrSettings` says; its threads end when the layer's scope closes. */
export const layer: Layer.Layer<OcrPool, never, OcrSettings> = Layer.scoped(
  OcrPool,
  Effect.gen(function*() {
    const settings = yield* OcrSettings
    const engine = enginePath()
    const timeout = Duration.decode(settings.timeout)
    const stats = yield* SubscriptionRef.make(none)
    const count = (change: (stats: Stats) => Partial<Stats>) =>
      SubscriptionRef.update(stats, (current) => ({ ...current, ...change(current) }))

    const threads = yield* Pool.makeWithTTL({
      acquire: OcrThread.start(engine).pipe(
        Effect.tap(() => count((s) => ({ live: s.live + 1, started: s.started + 1 }))),
        Effect.tap(() => Effect.addFinalizer(() => count((s) => ({ live: s.live - 1 }))))
      ),
      min: 0,
      max: settings.threads,
      timeToLive: settings.idleTimeout,
      timeToLiveStrategy: "usage"
    })

    const read = (image: GreyImage, options: ReadOptions) =>
      Effect.scoped(Effect.gen(function*() {
        yield* count((s) => ({ waiting: s.waiting + 1 }))
        const thread = yield* threads.get.pipe(Effect.ensuring(count((s) => ({ waiting: s.waiting - 1 }))))
        yield* Effect.acquireRelease(
          count((s) => ({ reading: s.reading + 1 })),
          () => count((s) => ({ reading: s.reading - 1 }))
        )
        const runFork = Runtime.runFork(yield* Effect.runtime<never>())
        const onProgress = options.onProgress
        const answer = yield* thread.read(
          image,
          options.language,
          onProgress === undefined ? () => {} : (fraction) => runFork(onProgress(fraction))
        ).pipe(
          Effect.timeoutFail({
            duration: timeout,
            onTimeout: () =>
              new OcrError({
                reason: "timeout",
                message: `reading the text took longer than ${Duration.toSeconds(timeout)} s`
              })
          }),
          // A thread whose reading did not end well is ended (when the reading lets it go) and not reused.
          Effect.onExit((exit) =>
            Exit.isSuccess(exit)
              ? Effect.void
              : Effect.zipRight(threads.invalidate(thread), count((s) => ({ stopped: s.stopped + 1 })))
          )
        )
        return parseTsv(answer.tsv)
      }))

    return OcrPool.of({ read, stats: SubscriptionRef.get(stats), changes: stats.changes })
  })
)
