/**
 * The operator's settings of `image.ocr`: how many worker threads read text at once, the largest
 * image it reads, how long one reading may take, and how long an idle thread is kept.
 */
import { Config, Context, Duration, Layer } from "effect"
import { availableParallelism } from "node:os"

/** The settings of `image.ocr`. */
export interface Settings {
  /** Worker threads that read text at once; more readings wait in a queue. */
  readonly threads: number
  /** Largest image read, in pixels (width × height), checked from its header before decoding. */
  readonly maxPixels: number
  /** Longest reading of one image, from the moment a thread takes it; the thread is then ended. */
  readonly timeout: Duration.DurationInput
  /** How long a thread with nothing to read is kept before it is ended (and its memory freed). */
  readonly idleTimeout: Duration.DurationInput
}

/**
 * Threads on a machine of `cores` cores: one core is left to the event loop and the rest of the
 * process, at least one thread and at most four.
 */
export const threadsFor = (cores: number): number => Math.max(1, Math.min(4, cores - 1))

/** The defaults: `threadsFor` this machine, 25 megapixels, 60 s a reading, threads idle for 5 minutes ended. */
export const defaults: Settings = {
  threads: threadsFor(availableParallelism()),
  maxPixels: 25_000_000,
  timeout: Duration.seconds(60),
  idleTimeout: Duration.minutes(5)
}

/** The settings of `image.ocr` in force. */
export class OcrSettings extends Context.Tag("@appexec/nodes-ocr/OcrSettings")<OcrSettings, Settings>() {}

/** The defaults with `overrides` applied. */
export const make = (overrides: Partial<Settings> = {}): Settings => ({ ...defaults, ...overrides })

/** Layer of the defaults with `overrides` applied. */
export const layer = (overrides: Partial<Settings> = {}): Layer.Layer<OcrSettings> =>
  Layer.succeed(OcrSettings, make(overrides))

const positive = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(fallback)
  )

/**
 * The settings from effect `Config` (`OcrNodes.layerConfig`, for a host configured by its environment):
 * `APPEXEC_OCR_THREADS`, `APPEXEC_OCR_MAX_PIXELS`, `APPEXEC_OCR_TIMEOUT` (a duration: `90 seconds`,
 * `2 minutes`) and `APPEXEC_OCR_IDLE_TIMEOUT`, each defaulting as in `defaults`.
 */
export const config: Config.Config<Settings> = Config.all({
  threads: positive("APPEXEC_OCR_THREADS", defaults.threads),
  maxPixels: positive("APPEXEC_OCR_MAX_PIXELS", defaults.maxPixels),
  timeout: Config.duration("APPEXEC_OCR_TIMEOUT").pipe(Config.withDefault(Duration.decode(defaults.timeout))),
  idleTimeout: Config.duration("APPEXEC_OCR_IDLE_TIMEOUT").pipe(
    Config.withDefault(Duration.decode(defaults.idleTimeout))
  )
})
