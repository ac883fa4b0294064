/**
 * The settings of the built-in nodes (docs/cli.md#settings), taken by every process that runs
 * executions: the bounds on media fetches and provider calls and the limits of video work, each
 * derived from its field in `NodesSettings` of `@appexec/nodes` (name, variable, default and
 * description are read from there: `APPEXEC_VIDEO_MAX_SECONDS` is `--video-max-seconds`), and the
 * default API root of `provider.openai`, and the ComfyUI servers of `provider.comfyui`.
 */
import { NodesSettings, ProviderOpenAI } from "@appexec/nodes"
import { ComfyuiSettings } from "@appexec/nodes-comfyui"
import { OcrSettings } from "@appexec/nodes-ocr"
import { Duration, Either, Schema } from "effect"
import * as Setting from "./Setting.js"
import * as Values from "./Values.js"

const worker: ReadonlyArray<Setting.Part> = ["worker"]

/** A limit or a text of the nodes' settings, as one value type. */
type Field = number | string | undefined

const countValue: Values.Value<Field> = {
  ...Values.count,
  show: (value) => (value === undefined ? "none" : String(value))
}

const textValue = (pseudo: string): Values.Value<Field> => ({
  pseudo,
  toggle: false,
  read: (text) => Either.right(Values.saysNone(text) ? undefined : text.trim()),
  show: (value) => (value === undefined ? "none" : String(value))
})

/** The groups of `NodesSettings`, by the key of its `Settings`. */
const groups = [["media", NodesSettings.Media], ["http", NodesSettings.Http], ["video", NodesSettings.Video]] as const

/** One setting of a field of a group of `NodesSettings`. */
export interface Limit {
  readonly group: (typeof groups)[number][0]
  readonly key: string
  readonly setting: Setting.Setting<Field>
}

/** Every field of `NodesSettings` as a setting, in its order. */
export const limits: ReadonlyArray<Limit> = groups.flatMap(([group, schema]) =>
  NodesSettings.fieldsOf(schema).map((field) => ({
    group,
    key: field.key,
    setting: Setting.make<Field>({
      name: field.variable.replace(/^APPEXEC_/, "").toLowerCase().replace(/_/g, "-"),
      variable: field.variable,
      description: field.description,
      parts: worker,
      value: field.kind === "count" ? countValue : textValue(field.key === "ffmpeg" ? "FILE" : "DIR"),
      default: field.default,
      ...(field.default === undefined
        ? { defaultText: field.key === "ffmpeg" ? "the one `npm install` brings" : "the system's" }
        : {})
    })
  }))
)

/** `--openai-base-url URL`. */
export const openaiBaseUrl = Setting.make({
  name: "openai-base-url",
  variable: ProviderOpenAI.BASE_URL_ENV,
  description: "the API root `provider.openai` nodes call when their app names none (Ollama, vLLM, …)",
  parts: worker,
  value: Values.url,
  default: undefined,
  defaultText: `OpenAI's, \`${ProviderOpenAI.OPENAI_BASE_URL}\``
})

/** `--comfyui URL[,URL…]`: the ComfyUI servers, each reachable by outbound requests. */
export const comfyui = Setting.make({
  name: "comfyui",
  variable: ComfyuiSettings.SERVERS_ENV,
  description: "the ComfyUI servers `provider.comfyui` runs workflows on (comma-separated root URLs, such as " +
    "`http://127.0.0.1:8188`); outbound requests may reach their hosts. Each runs one prompt of a process at a " +
    "time, or N with `URL*N` ([docs/nodes.md](nodes.md#providercomfyui-appexecnodes-comfyui))",
  parts: worker,
  value: Values.list(
    "URLS",
    (text) => Either.map(ComfyuiSettings.parseServers(text), (servers) => servers[0]!),
    (url) => url
  ),
  default: []
})

/** `--comfyui-auth-secret NAME`: the secret sent as `Authorization` to the ComfyUI servers. */
export const comfyuiAuthSecret = Setting.make({
  name: "comfyui-auth-secret",
  variable: ComfyuiSettings.AUTH_SECRET_ENV,
  description: "the name of the operator's secret (`appexec secrets set NAME`) whose value (`Bearer …`) goes as " +
    "`Authorization` with every request and websocket to the ComfyUI servers, for servers behind an authenticating proxy",
  parts: worker,
  value: Values.optional(Values.text("NAME")),
  default: undefined
})

/** `--ocr-threads N`: how many worker threads of `image.ocr` read text at once. */
export const ocrThreads = Setting.make({
  name: "ocr-threads",
  variable: "APPEXEC_OCR_THREADS",
  description: "worker threads of `image.ocr` that read text at once; more readings wait in a queue " +
    "([nodes](./nodes.md#imageocr-appexecnodes-ocr))",
  parts: worker,
  value: Values.count,
  default: OcrSettings.defaults.threads,
  defaultText: "the cores less one, 1 to 4"
})

/** `--ocr-max-pixels N`: the largest image `image.ocr` reads. */
export const ocrMaxPixels = Setting.make({
  name: "ocr-max-pixels",
  variable: "APPEXEC_OCR_MAX_PIXELS",
  description: "the largest image `image.ocr` reads, in pixels (width × height), checked from its header",
  parts: worker,
  value: Values.count,
  default: OcrSettings.defaults.maxPixels
})

/** A duration of `image.ocr`'s settings, in `APPEXEC_OCR_<NAME>` for `--ocr-<name>`. */
const ocrDuration = (name: string, description: string, defaultValue: Duration.DurationInput) =>
  Setting.make({
    name: `ocr-${name}`,
    variable: `APPEXEC_OCR_${name.toUpperCase().replace(/-/g, "_")}`,
    description,
    parts: worker,
    value: Values.duration({ positive: true }),
    default: Duration.decode(defaultValue)
  })

/** `--ocr-timeout DURATION`: the longest reading of one image. */
export const ocrTimeout = ocrDuration(
  "timeout",
  "the longest reading of one image by `image.ocr`, from the moment a thread takes it",
  OcrSettings.defaults.timeout
)

/** `--ocr-idle-timeout DURATION`: how long an idle `image.ocr` thread is kept. */
export const ocrIdleTimeout = ocrDuration(
  "idle-timeout",
  "how long a worker thread of `image.ocr` with nothing to read is kept before it ends",
  OcrSettings.defaults.idleTimeout
)

/** Every setting of the nodes, in the order docs/cli.md lists them. */
export const all: ReadonlyArray<Setting.Any> = [
  ...limits.map((limit) => limit.setting),
  openaiBaseUrl,
  comfyui,
  comfyuiAuthSecret,
  ocrThreads,
  ocrMaxPixels,
  ocrTimeout,
  ocrIdleTimeout
]

/**
 * The nodes' settings from the value of each limit (`valueOf`), checked by `NodesSettings`'s own
 * schema.
 */
export const nodesSettings = (valueOf: (setting: Setting.Setting<Field>) => Field) =>
  Schema.decodeUnknownEither(NodesSettings.Settings)(
    Object.fromEntries(
      groups.map(([group]) => [
        group,
        Object.fromEntries(
          limits.filter((limit) => limit.group === group).flatMap((limit) => {
            const value = valueOf(limit.setting)
            return value === undefined ? [] : [[limit.key, value]]
          })
        )
      ])
    )
  )
