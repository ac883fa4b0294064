/**
 * One OCR worker thread, seen from the parent: started with the engine loaded, it reads one
 * image at a time and is terminated when its scope closes. Tesseract cannot be interrupted
 * inside a reading, so a reading that must stop (canceled, timed out) is stopped by ending the
 * thread: the pool then drops it and starts another when one is needed. The thread is
 * unreferenced: it never keeps a process alive.
 */
import { Effect, Either, Schema, type Scope } from "effect"
import { Worker } from "node:worker_threads"
import type { Language } from "../Languages.js"
import { OcrError } from "../OcrError.js"
import { source } from "./OcrThreadSource.js"

/** An image as the thread reads it: 8-bit grey levels, row by row. */
export interface GreyImage {
  readonly width: number
  readonly height: number
  readonly data: Uint8Array
}

/** What the thread answered for an image: Tesseract's TSV and its mean confidence (0–100). */
export interface Answer {
  readonly tsv: string
  readonly confidence: number
}

/** A started thread. */
export interface OcrThread {
  /** Reads `image` in `language`, calling `onProgress` with the fraction read (0–1) as it goes. */
  readonly read: (
    image: GreyImage,
    language: Language,
    onProgress: (fraction: number) => void
  ) => Effect.Effect<Answer, OcrError>
}

/** The messages of the thread (`scripts/ocr-thread.mjs`). */
const Message = Schema.Union(
  Schema.Struct({ type: Schema.Literal("ready") }),
  Schema.Struct({ type: Schema.Literal("progress"), percent: Schema.Number }),
  Schema.Struct({ type: Schema.Literal("read"), tsv: Schema.String, confidence: Schema.Number }),
  Schema.Struct({ type: Schema.Literal("failed"), message: Schema.String })
)
type Message = typeof Message.Type
const decodeMessage = Schema.decodeUnknownEither(Message)

const engineError = (message: string) => new OcrError({ reason: "engine", message })

/** Recognition reports from 30 % (layout found) to 100 %. */
const fractionOf = (percent: number) => Math.max(0, Math.min(1, (percent - 30) / 70))

/**
 * The process's Node options for the thread, less `--input-type`: the thread's script is
 * CommonJS, which `--input-type=module` (a parent run as `node --input-type=module -e …`) would
 * make the thread read as an ES module.
 */
const threadArgs = () =>
  process.execArgv.filter((arg, i, all) => !arg.startsWith("--input-type") && all[i - 1] !== "--input-type")

/** Starts a thread with Tesseract's engine at `enginePath`; it is terminated when the scope closes. */
export const start = (enginePath: string): Effect.Effect<OcrThread, OcrError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<Worker, OcrError>((resume) => {
      const worker = new Worker(source, { eval: true, execArgv: threadArgs(), workerData: { corePath: enginePath } })
      worker.unref()
      const onMessage = (raw: unknown) =>
        Either.map(decodeMessage(raw), (message) => {
          if (message.type === "ready") settle(Effect.succeed(worker))
          if (message.type === "failed") failed(message.message)
        })
      const onError = (error: Error) => failed(`the OCR thread failed: ${error.message}`)
      const onExit = (code: number) => failed(`the OCR thread ended (exit code ${code})`)
      // A thread that could not load the engine is ended: it would sit idle.
      const failed = (message: string) => {
        void worker.terminate()
        settle(Effect.fail(engineError(message)))
      }
      const settle = (result: Effect.Effect<Worker, OcrError>) => {
        worker.off("message", onMessage).off("error", onError).off("exit", onExit)
        resume(result)
      }
      worker.on("message", onMessage).on("error", onError).on("exit", onExit)
      return Effect.promise(() => worker.terminate())
    }),
    (worker) => Effect.promise(() => worker.terminate())
  ).pipe(Effect.map(reader))

/**
 * The reading side of a started thread: one image at a time (the pool lends a thread to one
 * reading). A thread that failed or ended while idle is known to be gone: a reading given to it
 * fails at once (and the pool drops it), and its failure never goes unheard.
 */
const reader = (worker: Worker): OcrThread => {
  let gone: string | undefined
  worker.on("error", (error) => (gone ??= `the OCR thread failed: ${error.message}`))
  worker.on("exit", (code) => (gone ??= `the OCR thread ended (exit code ${code})`))
  return {
    read: (image, language, onProgress) =>
      Effect.suspend(() =>
        gone === undefined ? readOn(worker, image, language, onProgress) : Effect.fail(engineError(gone))
      )
  }
}

/** Sends `image` to `worker` and waits for its answer. */
const readOn = (worker: Worker, image: GreyImage, language: Language, onProgress: (fraction: number) => void) =>
  Effect.async<Answer, OcrError>((resume) => {
    const onMessage = (raw: unknown) => {
      const decoded = decodeMessage(raw)
      if (Either.isLeft(decoded)) return settle(Effect.fail(engineError("the OCR thread answered in an unknown way")))
      const message: Message = decoded.right
      switch (message.type) {
        case "progress":
          return onProgress(fractionOf(message.percent))
        case "read":
          return settle(Effect.succeed({ tsv: message.tsv, confidence: message.confidence }))
        case "failed":
          return settle(Effect.fail(engineError(message.message)))
        case "ready":
          return
      }
    }
    const onError = (error: Error) => settle(Effect.fail(engineError(`the OCR thread failed: ${error.message}`)))
    const onExit = (code: number) => settle(Effect.fail(engineError(`the OCR thread ended (exit code ${code})`)))
    const settle = (result: Effect.Effect<Answer, OcrError>) => {
      stop()
      resume(result)
    }
    const stop = () => worker.off("message", onMessage).off("error", onError).off("exit", onExit)
    worker.on("message", onMessage).on("error", onError).on("exit", onExit)
    worker.postMessage({ image, language })
    // Interrupted: the answer is no longer awaited; the pool ends the thread, which is still reading.
    return Effect.sync(stop)
  })
