/**
 * Operator settings of the built-in nodes, defined once (`Settings`): the bounds on fetched media
 * and provider calls, and the limits of video work, each field with its default, its environment
 * variable and its description side by side (`variableOf`, `fieldsOf` read them back, so that
 * `appexec` derives its flags and docs from them). The secrets nodes put in headers are not
 * settings: they come from `SecretStore` (sealed, or `APPEXEC_SECRET_<NAME>` variables below it).
 */
import { Config, ConfigError, Context, Either, Layer, Option, ParseResult, Schema, SchemaAST } from "effect"

/** The annotation that names a field's environment variable (`APPEXEC_MEDIA_MAX_BYTES`). */
export const VariableId: unique symbol = Symbol.for("@appexec/nodes/NodesSettings/Variable")

const positive = "must be a positive integer"

/** A positive whole number, also from its text (an environment variable's). */
const PositiveInt = Schema.Union(Schema.Int, Schema.NumberFromString.pipe(Schema.compose(Schema.Int))).pipe(
  Schema.compose(Schema.Int.pipe(Schema.positive({ message: () => positive })))
)

/** A limit: a positive whole number with its default, variable and description. */
const limit = (variable: string, fallback: number, description: string) =>
  Schema.optionalWith(PositiveInt.annotations({ description, default: fallback, [VariableId]: variable }), {
    default: () => fallback
  })

/** A text that is absent unless given (a path). */
const text = (variable: string, description: string) =>
  Schema.optional(Schema.NonEmptyString.annotations({ description, [VariableId]: variable }))

/** Bounds on media fetched from URLs (image inputs, media outputs fed by a URL). */
export const Media = Schema.Struct({
  timeoutMs: limit("APPEXEC_MEDIA_TIMEOUT_MS", 30_000, "time limit of one media fetch, in milliseconds"),
  maxBytes: limit("APPEXEC_MEDIA_MAX_BYTES", 25 * 1024 * 1024, "largest media file fetched, in bytes"),
  maxPixels: limit(
    "APPEXEC_MEDIA_MAX_PIXELS",
    50_000_000,
    "largest decoded image, in pixels (width × height), against decompression bombs"
  )
})

/** Bounds on the calls `http.request`, `http.job` and the provider nodes make. */
export const Http = Schema.Struct({
  timeoutMs: limit(
    "APPEXEC_HTTP_TIMEOUT_MS",
    60_000,
    "time limit of one provider or `http.request` call, in milliseconds"
  ),
  maxBytes: limit(
    "APPEXEC_HTTP_MAX_BYTES",
    10 * 1024 * 1024,
    "largest answer of a provider or `http.request` call, in bytes"
  )
})

/** The limits of video work: what the `video.*` nodes make and read, and how long ffmpeg may run. */
export const Video = Schema.Struct({
  ffmpeg: text("APPEXEC_FFMPEG", "the ffmpeg binary (absent: the one `npm install` brings)"),
  timeoutMs: limit(
    "APPEXEC_VIDEO_TIMEOUT_MS",
    300_000,
    "longest ffmpeg run, in milliseconds; then it is killed and the node fails"
  ),
  maxSeconds: limit("APPEXEC_VIDEO_MAX_SECONDS", 120, "longest video made, or read by `video.convert`, in seconds"),
  maxPixels: limit("APPEXEC_VIDEO_MAX_PIXELS", 3840 * 2160, "largest video frame made or read, in pixels"),
  maxBytes: limit("APPEXEC_VIDEO_MAX_BYTES", 100 * 1024 * 1024, "largest video made, in bytes"),
  tempDir: text("APPEXEC_VIDEO_TEMP_DIR", "where each video run makes its temporary directory (absent: the system's)")
})

/** The settings of the built-in nodes: each group with its defaults. */
export const Settings = Schema.Struct({
  media: Schema.optionalWith(Media, { default: () => Schema.decodeSync(Media)({}) }),
  http: Schema.optionalWith(Http, { default: () => Schema.decodeSync(Http)({}) }),
  video: Schema.optionalWith(Video, { default: () => Schema.decodeSync(Video)({}) })
})

/** The settings of the built-in nodes. */
export type Settings = typeof Settings.Type

/** Bounds on a kind of outbound request. */
export type Bounds = typeof Http.Type

/** The limits of video work. */
export type VideoLimits = typeof Video.Type

/**
 * The defaults: media up to 25 MiB within 30 s and 50 megapixels; provider answers up to 10 MiB
 * within 60 s; videos up to 2 minutes, 3840×2160 and 100 MiB, made within 5 minutes.
 */
export const defaults: Settings = Schema.decodeSync(Settings)({})

/** One field of a group as `appexec` shows it: its key, variable, default and description. */
export interface Field {
  readonly key: string
  readonly variable: string
  /** Absent for a text with no default. */
  readonly default: number | undefined
  readonly description: string
  /** A positive whole number, or a text (a path). */
  readonly kind: "count" | "text"
}

/** The fields of a group (`Media`, `Http`, `Video`), in order, read from their annotations. */
export const fieldsOf = (group: typeof Media | typeof Http | typeof Video): ReadonlyArray<Field> =>
  Object.entries<{ readonly from: Schema.Schema.Any }>(group.fields).map(([key, field]) => {
    const ast = field.from.ast
    const fallback = Option.getOrUndefined(
      Option.filter(SchemaAST.getDefaultAnnotation(ast), (d): d is number => typeof d === "number")
    )
    return {
      key,
      variable: variableOf(ast),
      default: fallback,
      description: Option.getOrElse(SchemaAST.getDescriptionAnnotation(ast), () => key),
      kind: fallback === undefined ? "text" : "count"
    }
  })

/** The environment variable a field's schema names. */
const variableOf = (ast: SchemaAST.AST): string => {
  const found = ast.annotations[VariableId]
  return typeof found === "string" ? found : ""
}

/** Settings that differ from the defaults; each group is merged with its defaults. */
export interface Overrides {
  readonly media?: Partial<Settings["media"]>
  readonly http?: Partial<Bounds>
  readonly video?: Partial<VideoLimits>
}

/** The settings of the built-in nodes in force. */
export class NodesSettings extends Context.Tag("@appexec/nodes/NodesSettings")<NodesSettings, Settings>() {}

/** The defaults with `overrides` applied. */
export const make = (overrides: Overrides = {}): Settings => ({
  media: { ...defaults.media, ...overrides.media },
  http: { ...defaults.http, ...overrides.http },
  video: { ...defaults.video, ...overrides.video }
})

/** Layer of the defaults with `overrides` applied. */
export const layer = (overrides: Overrides = {}): Layer.Layer<NodesSettings> =>
  Layer.succeed(NodesSettings, make(overrides))

/**
 * A group read from effect `Config`, each field from its variable (absent: its default); a value
 * the field refuses fails, naming the variable.
 */
const configOf = <A, I>(group: Schema.Schema<A, I>, fields: ReadonlyArray<Field>): Config.Config<A> =>
  Config.all(fields.map((f) => Config.option(Config.string(f.variable)))).pipe(
    Config.mapOrFail((values) => {
      const given = Object.fromEntries(
        fields.flatMap((f, i) => Option.match(values[i]!, { onNone: () => [], onSome: (v) => [[f.key, v]] }))
      )
      return Either.mapLeft(Schema.decodeUnknownEither(group)(given), (error) => {
        const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
        const field = fields.find((f) => f.key === issue?.path[0])
        const variable = field?.variable ?? "APPEXEC_*"
        return ConfigError.InvalidData(
          [variable],
          `${variable} ${field?.kind === "text" ? "must not be empty" : positive}`
        )
      })
    })
  )

/**
 * The video limits from effect `Config`: `APPEXEC_FFMPEG`, `APPEXEC_VIDEO_TIMEOUT_MS`,
 * `APPEXEC_VIDEO_MAX_SECONDS`, `APPEXEC_VIDEO_MAX_PIXELS`, `APPEXEC_VIDEO_MAX_BYTES` and
 * `APPEXEC_VIDEO_TEMP_DIR`, each defaulting as in `defaults`.
 */
export const videoConfig: Config.Config<VideoLimits> = configOf(Video, fieldsOf(Video))

/**
 * Layer reading every group from effect `Config` (`APPEXEC_MEDIA_*`, `APPEXEC_HTTP_*` and the
 * video limits of `videoConfig`), each field defaulting as in `defaults`.
 */
export const layerConfig = (): Layer.Layer<NodesSettings, ConfigError.ConfigError> =>
  Layer.effect(
    NodesSettings,
    Config.all({ media: configOf(Media, fieldsOf(Media)), http: configOf(Http, fieldsOf(Http)), video: videoConfig })
  )
