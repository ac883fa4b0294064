/**
 * Operator settings of the built-in nodes: the named secrets that `http.request` may put in
 * headers, the bounds on fetched media and provider calls, and the limits of video work. Secrets
 * live here, in the operator's configuration, and never in app definitions or inputs.
 */
import { Config, type ConfigError, Context, Effect, Layer, Option, Redacted } from "effect"

/** Bounds on a kind of outbound request. */
export interface Bounds {
  /** Whole-exchange time limit, in milliseconds. */
  readonly timeoutMs: number
  /** Largest response body accepted, in bytes. */
  readonly maxBytes: number
}

/** The settings of the built-in nodes. */
export interface Settings {
  /** Named secrets, referred to by name from `http.request` headers. */
  readonly secrets: Readonly<Record<string, Redacted.Redacted<string>>>
  /** Media fetched from URLs (image inputs, media outputs fed by a URL). */
  readonly media: Bounds & {
    /** Largest decoded image, in pixels (width × height), against decompression bombs. */
    readonly maxPixels: number
  }
  /** Calls made by `http.request`. */
  readonly http: Bounds
  /** Video work on ffmpeg (`video.*` nodes). */
  readonly video: VideoLimits
}

/** The limits of video work: what the `video.*` nodes make and read, and how long ffmpeg may run. */
export interface VideoLimits {
  /** The ffmpeg binary; when undefined, `APPEXEC_FFMPEG`, else the one of `@ffmpeg-installer/ffmpeg`. */
  readonly ffmpeg: string | undefined
  /** Longest run of ffmpeg, in milliseconds; the process is killed when it is reached. */
  readonly timeoutMs: number
  /** Longest video made or read, in seconds. */
  readonly maxSeconds: number
  /** Largest video frame made or read, in pixels (width × height). */
  readonly maxPixels: number
  /** Largest video made, in bytes. */
  readonly maxBytes: number
  /** Directory in which each run makes its temporary directory; the system's when undefined. */
  readonly tempDir: string | undefined
}

/**
 * The defaults: no secrets; media up to 25 MiB within 30 s and 50 megapixels; provider answers up
 * to 10 MiB within 60 s; videos up to 2 minutes, 3840×2160 and 100 MiB, made within 5 minutes.
 */
export const defaults: Settings = {
  secrets: {},
  media: { timeoutMs: 30_000, maxBytes: 25 * 1024 * 1024, maxPixels: 50_000_000 },
  http: { timeoutMs: 60_000, maxBytes: 10 * 1024 * 1024 },
  video: {
    ffmpeg: undefined,
    timeoutMs: 300_000,
    maxSeconds: 120,
    maxPixels: 3840 * 2160,
    maxBytes: 100 * 1024 * 1024,
    tempDir: undefined
  }
}

/** Settings that differ from the defaults; each group is merged with its defaults. */
export interface Overrides {
  readonly secrets?: Readonly<Record<string, Redacted.Redacted<string> | string>>
  readonly media?: Partial<Settings["media"]>
  readonly http?: Partial<Bounds>
  readonly video?: Partial<VideoLimits>
}

/** The settings of the built-in nodes in force. */
export class NodesSettings extends Context.Tag("@appexec/nodes/NodesSettings")<NodesSettings, Settings>() {}

/** The defaults with `overrides` applied; plain-string secrets are wrapped as `Redacted`. */
export const make = (overrides: Overrides = {}): Settings => ({
  secrets: Object.fromEntries(
    Object.entries(overrides.secrets ?? {}).map(([name, value]) => [
      name,
      typeof value === "string" ? Redacted.make(value) : value
    ])
  ),
  media: { ...defaults.media, ...overrides.media },
  http: { ...defaults.http, ...overrides.http },
  video: { ...defaults.video, ...overrides.video }
})

/** Layer of the defaults with `overrides` applied. */
export const layer = (overrides: Overrides = {}): Layer.Layer<NodesSettings> =>
  Layer.succeed(NodesSettings, make(overrides))

/** Prefix of environment variables that hold secrets: `APPEXEC_SECRET_PROVIDER_TOKEN` is the secret `provider_token`. */
export const SECRET_ENV_PREFIX = "APPEXEC_SECRET_"

/** The secrets among environment variables: every `APPEXEC_SECRET_<NAME>`, named `<name>` in lower case. */
export const secretsFromEnv = (
  env: Readonly<Record<string, string | undefined>>
): Readonly<Record<string, Redacted.Redacted<string>>> =>
  Object.fromEntries(
    Object.entries(env)
      .filter((entry): entry is [string, string] => entry[0].startsWith(SECRET_ENV_PREFIX) && entry[1] !== undefined)
      .map(([name, value]) => [name.slice(SECRET_ENV_PREFIX.length).toLowerCase(), Redacted.make(value)])
  )

const positive = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(fallback)
  )

const optionalText = (name: string) =>
  Config.nonEmptyString(name).pipe(Config.option, Config.map(Option.getOrUndefined))

/**
 * The video limits from effect `Config`: `APPEXEC_FFMPEG`, `APPEXEC_VIDEO_TIMEOUT_MS`,
 * `APPEXEC_VIDEO_MAX_SECONDS`, `APPEXEC_VIDEO_MAX_PIXELS`, `APPEXEC_VIDEO_MAX_BYTES` and
 * `APPEXEC_VIDEO_TEMP_DIR`, each defaulting as in `defaults` (what `appexec serve` and `worker` read).
 */
export const videoConfig: Config.Config<VideoLimits> = Config.all({
  ffmpeg: optionalText("APPEXEC_FFMPEG"),
  timeoutMs: positive("APPEXEC_VIDEO_TIMEOUT_MS", defaults.video.timeoutMs),
  maxSeconds: positive("APPEXEC_VIDEO_MAX_SECONDS", defaults.video.maxSeconds),
  maxPixels: positive("APPEXEC_VIDEO_MAX_PIXELS", defaults.video.maxPixels),
  maxBytes: positive("APPEXEC_VIDEO_MAX_BYTES", defaults.video.maxBytes),
  tempDir: optionalText("APPEXEC_VIDEO_TEMP_DIR")
})

/**
 * Layer reading the bounds from effect `Config` (`APPEXEC_MEDIA_MAX_BYTES`,
 * `APPEXEC_MEDIA_TIMEOUT_MS`, `APPEXEC_MEDIA_MAX_PIXELS`, `APPEXEC_HTTP_MAX_BYTES`,
 * `APPEXEC_HTTP_TIMEOUT_MS`, and the video limits of `videoConfig`), each defaulting as in
 * `defaults`, with the given secrets (for instance `secretsFromEnv(process.env)`).
 */
export const layerConfig = (
  secrets: Readonly<Record<string, Redacted.Redacted<string>>> = {}
): Layer.Layer<NodesSettings, ConfigError.ConfigError> =>
  Layer.effect(
    NodesSettings,
    Effect.gen(function*() {
      return make({
        secrets,
        media: {
          maxBytes: yield* positive("APPEXEC_MEDIA_MAX_BYTES", defaults.media.maxBytes),
          timeoutMs: yield* positive("APPEXEC_MEDIA_TIMEOUT_MS", defaults.media.timeoutMs),
          maxPixels: yield* positive("APPEXEC_MEDIA_MAX_PIXELS", defaults.media.maxPixels)
        },
        http: {
          maxBytes: yield* positive("APPEXEC_HTTP_MAX_BYTES", defaults.http.maxBytes),
          timeoutMs: yield* positive("APPEXEC_HTTP_TIMEOUT_MS", defaults.http.timeoutMs)
        },
        video: yield* videoConfig
      })
    })
  )
