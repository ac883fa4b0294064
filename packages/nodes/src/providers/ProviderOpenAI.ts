/**
 * `provider.openai`: a call to an OpenAI-compatible API (OpenAI, vLLM, Ollama, LM Studio,
 * llama.cpp's server), in one of two modes:
 * - `chat`: `POST {baseUrl}/chat/completions` with `model` and `messages` whose contents are
 *   templates of upstream values; yields the text of the first choice
 *   (https://platform.openai.com/docs/api-reference/chat/create);
 * - `image`: `POST {baseUrl}/images/generations` with `model` and a templated `prompt`; yields
 *   the image of the first item, decoded from `b64_json` or fetched from its `url` through the
 *   guarded client (https://platform.openai.com/docs/api-reference/images/create).
 *
 * `baseUrl` is the API root with its version, as OpenAI's SDKs take it (`https://api.openai.com/v1`,
 * `http://127.0.0.1:11434/v1` for Ollama); the operator's default (`OpenAiSettings`,
 * `APPEXEC_OPENAI_BASE_URL` in `appexec serve`) when the config gives none. The token is the
 * operator's secret named by `secret` (default `OPENAI_API_KEY`; `null` sends none, for local
 * servers), resolved for the execution's workspace. Requests go through `ProviderHttp`: 429 waits
 * as `Retry-After` says, 502/503/504, resets and timeouts are retried with backoff, each retry a
 * line of the execution's log. A provider's error body is never shown whole to the consumer
 * (providers echo credentials): the consumer reads the status, what it likely means, OpenAI's error
 * `code` and `message` (not for a 401, whose message quotes part of the key); the operator's log
 * gets the start of the body. An echoed token is masked by the redactor (before the message is
 * cut to its length), as everywhere.
 */
import { NodeType, Redactor, SecretStore } from "@appexec/core"
import { pick } from "@appexec/core/JsonPointer"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import * as ProviderHttp from "../internal/ProviderHttp.js"
import * as RequestNode from "../internal/RequestNode.js"
import { fill, placeholdersOf } from "../internal/template.js"
import { fetchMedia, formatBytes } from "../Media.js"
import { NodesSettings } from "../NodesSettings.js"

/** OpenAI's API root, with its version. */
export const OPENAI_BASE_URL = "https://api.openai.com/v1"

/** The operator's default API root of `provider.openai`, used when a node's config gives none. */
export class OpenAiSettings extends Context.Reference<OpenAiSettings>()("@appexec/nodes/OpenAiSettings", {
  defaultValue: () => ({ baseUrl: OPENAI_BASE_URL })
}) {}

/** The name of the environment variable that sets `OpenAiSettings.baseUrl` in `appexec serve`. */
export const BASE_URL_ENV = "APPEXEC_OPENAI_BASE_URL"

/** `OpenAiSettings` from the environment: `APPEXEC_OPENAI_BASE_URL` when set, else OpenAI's API. */
export const layerFromEnv = (env: Readonly<Record<string, string | undefined>>): Layer.Layer<OpenAiSettings> => {
  const baseUrl = env[BASE_URL_ENV]?.trim()
  return Layer.succeed(OpenAiSettings, { baseUrl: baseUrl === undefined || baseUrl === "" ? OPENAI_BASE_URL : baseUrl })
}

/** The secret a node uses when its config names none. */
export const DEFAULT_SECRET = "OPENAI_API_KEY"

/** One chat message; `content` is a template with `{{nodeId}}` placeholders. */
export const Message = Schema.Struct({
  role: Schema.Literal("system", "developer", "user", "assistant"),
  content: Schema.String
})

/** The config of `provider.openai`. */
export const Config = Schema.Struct({
  /** `chat` (chat completions → text) or `image` (image generations → image). */
  mode: Schema.Literal("chat", "image"),
  /** The model, such as `gpt-4o-mini` or `llama3.2`; a template (`{{model}}` lets an input choose it). */
  model: Schema.NonEmptyString,
  /** The API root with its version (`https://api.openai.com/v1`); the operator's default when absent. */
  baseUrl: Schema.optional(Schema.NonEmptyString),
  /** The name of the operator's secret holding the token (default `OPENAI_API_KEY`); `null`: no token. */
  secret: Schema.optionalWith(Schema.NullOr(SecretStore.SecretName), { default: () => DEFAULT_SECRET }),
  /** chat: the messages, in order. */
  messages: Schema.optional(Schema.Array(Message)),
  /** chat: sampling temperature, 0–2. */
  temperature: Schema.optional(Schema.Number.pipe(Schema.between(0, 2))),
  /** chat: `max_tokens`, the longest answer in tokens. */
  maxTokens: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1, 1_000_000))),
  /** chat: `max_completion_tokens`, which OpenAI's reasoning models take instead of `max_tokens`. */
  maxCompletionTokens: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1, 1_000_000))),
  /** image: the prompt, a template. */
  prompt: Schema.optional(Schema.String),
  /** image: `size`, such as `1024x1024` or `auto`. */
  size: Schema.optional(
    Schema.String.pipe(Schema.pattern(/^(\d{2,5}x\d{2,5}|auto)$/, { message: () => "WIDTHxHEIGHT or auto" }))
  ),
  /** image: `quality` (`standard`, `hd`, `low`, `medium`, `high`, `auto`: what the model takes). */
  quality: Schema.optional(Schema.Literal("standard", "hd", "low", "medium", "high", "auto")),
  /** image: `response_format` (`url` or `b64_json`); not sent when absent (GPT image models always answer `b64_json`). */
  responseFormat: Schema.optional(Schema.Literal("url", "b64_json")),
  /** Time limit of each request in milliseconds, up to 10 minutes (default: the operator's `http.timeoutMs`, 60 s). */
  timeoutMs: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1, 600_000))),
  /** Retries of transient failures: `count` (0–10, default 4) within `withinMs` (default 2 minutes). */
  retry: Schema.optional(ProviderHttp.RetryConfig)
})
export type Config = typeof Config.Type

const CHAT_ONLY = ["messages", "temperature", "maxTokens", "maxCompletionTokens"] as const
const IMAGE_ONLY = ["prompt", "size", "quality", "responseFormat"] as const

/** The templates of a config: the model, the messages' contents, the prompt. */
const templatesOf = (config: Config): ReadonlyArray<string> => [
  config.model,
  ...(config.messages ?? []).map((m) => m.content),
  ...(config.prompt === undefined ? [] : [config.prompt])
]

/** The import-time problems of a config besides its placeholders. */
const problemsOf = (config: Config): ReadonlyArray<string> => {
  const problems = [...RequestNode.baseUrlProblems(config.baseUrl)]
  const misplaced = config.mode === "chat" ? IMAGE_ONLY : CHAT_ONLY
  for (const key of misplaced) {
    if (config[key] !== undefined) problems.push(`${key} is for mode ${config.mode === "chat" ? "image" : "chat"}`)
  }
  if (config.mode === "chat") {
    if (config.messages === undefined || config.messages.length === 0) {
      problems.push(
        "mode chat needs messages (at least one, such as { \"role\": \"user\", \"content\": \"{{prompt}}\" })"
      )
    }
    if (config.maxTokens !== undefined && config.maxCompletionTokens !== undefined) {
      problems.push("give maxTokens or maxCompletionTokens, not both")
    }
  } else if (config.prompt === undefined || config.prompt.trim() === "") {
    problems.push("mode image needs a prompt, such as \"{{prompt}}\"")
  }
  return problems
}

const fail = (message: string) => new NodeType.NodeFailure({ message })

/** OpenAI's `error.code` (a plain identifier) and `error.message` (one line, at most 300 characters) of an error body. */
const errorOf = (body: string): { readonly code: string | undefined; readonly message: string | undefined } => {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return { code: undefined, message: undefined }
  }
  const code = pick(parsed, "/error/code")
  const message = pick(parsed, "/error/message")
  const line = Option.isSome(message) && typeof message.value === "string"
    ? message.value.replace(/\s+/g, " ").trim()
    : ""
  return {
    code: Option.isSome(code) && typeof code.value === "string" && /^[a-z0-9_.-]{1,64}$/i.test(code.value)
      ? code.value
      : undefined,
    message: line === "" ? undefined : line.length > 300 ? `${line.slice(0, 300)}…` : line
  }
}

/**
 * The consumer's words for a non-2xx answer: the status, what it likely means, OpenAI's error code
 * and, except for a 401 (whose message quotes part of the key), its message.
 */
const answeredMessage = (
  status: number,
  body: string,
  config: Config,
  model: string,
  hasToken: boolean
): string => {
  const error = errorOf(body)
  const text = ProviderHttp.statusText(status)
  const code = error.code === undefined ? "" : ` (code: ${error.code})`
  const detail = error.message === undefined ? "" : `: ${error.message}`
  switch (status) {
    case 401:
      return hasToken
        ? `the provider refused the token (${text})${code}: check the secret ${config.secret} (appexec secrets set ${config.secret})`
        : `the provider asks for a token (${text})${code}: name a secret in the node's config (secret) and set it`
    case 403:
      return `the provider refused access (${text})${code}${detail}`
    case 404:
      return `the provider answered ${text}${code}: check the base URL and that the model '${model}' exists there${detail}`
    case 429:
      return `the provider is rate limiting (${text})${code} and the retries ran out${detail}`
    default:
      return status >= 400 && status < 500
        ? `the provider refused the request (${text})${code}${detail}`
        : `the provider answered ${text}${code}${detail}`
  }
}

/** The media type of image bytes from their signature: PNG, JPEG, WebP or GIF. */
const imageTypeOf = (bytes: Uint8Array): string | undefined => {
  const starts = (...signature: Array<number>) => signature.every((b, i) => bytes[i] === b)
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png"
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg"
  if (starts(0x52, 0x49, 0x46, 0x46) && String.fromCharCode(...bytes.subarray(8, 12)) === "WEBP") return "image/webp"
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif"
  return undefined
}

/** The text of a chat completion's first choice. */
const chatText = (answer: unknown) =>
  Effect.gen(function*() {
    const message = pick(answer, "/choices/0/message")
    if (Option.isNone(message)) return yield* fail("the provider's answer has no choices[0].message")
    const content = pick(message.value, "/content")
    if (Option.isSome(content) && typeof content.value === "string") return content.value
    const refusal = pick(message.value, "/refusal")
    if (Option.isSome(refusal) && typeof refusal.value === "string" && refusal.value !== "") {
      return yield* fail(`the model refused: ${refusal.value.slice(0, 300)}`)
    }
    const reason = pick(answer, "/choices/0/finish_reason")
    return yield* fail(
      `the model answered no text${
        Option.isSome(reason) && typeof reason.value === "string" ? ` (finish_reason: ${reason.value})` : ""
      }`
    )
  })

/** The image of an image generation's first item: `b64_json` decoded, or `url` fetched. */
const generatedImage = (answer: unknown) =>
  Effect.gen(function*() {
    const { media: limits } = yield* NodesSettings
    const b64 = pick(answer, "/data/0/b64_json")
    if (Option.isSome(b64) && typeof b64.value === "string" && b64.value !== "") {
      if (b64.value.length > Math.ceil(limits.maxBytes / 3) * 4 + 4) {
        return yield* fail(`the generated image is larger than ${formatBytes(limits.maxBytes)}`)
      }
      const bytes = new Uint8Array(Buffer.from(b64.value, "base64"))
      const contentType = imageTypeOf(bytes)
      if (contentType === undefined) return yield* fail("the provider's b64_json is not a PNG, JPEG, WebP or GIF image")
      return { contentType, bytes }
    }
    const url = pick(answer, "/data/0/url")
    if (Option.isSome(url) && typeof url.value === "string" && url.value !== "") {
      return yield* fetchMedia(url.value, { accept: ["image"], need: "image" }).pipe(
        Effect.mapError((failure) => fail(`the generated image could not be fetched: ${failure.message}`))
      )
    }
    return yield* fail("the provider's answer has no data[0].b64_json or data[0].url")
  })

/** `provider.openai`: a chat completion (text) or an image generation (image) on an OpenAI-compatible API. */
export const providerOpenAI = RequestNode.define({
  type: "provider.openai",
  description:
    "Calls an OpenAI-compatible API (OpenAI, vLLM, Ollama, LM Studio, llama.cpp): chat completions to text, or image generations to an image.",
  config: Config,
  placeholders: (config) => templatesOf(config).flatMap(placeholdersOf),
  headers: (config) => config.secret === null ? {} : { authorization: { secret: config.secret, prefix: "Bearer " } },
  problems: problemsOf,
  run: ({ config, headers, log, settings, textOf }) =>
    Effect.gen(function*() {
      const defaults = yield* OpenAiSettings
      const baseUrl = RequestNode.apiRoot(config.baseUrl, defaults.baseUrl)
      const problem = RequestNode.baseUrlProblem(baseUrl)
      if (problem !== undefined) {
        return yield* fail(`the provider's ${problem} (the operator's default: ${BASE_URL_ENV})`)
      }
      const model = fill(config.model, textOf).trim()
      if (model === "") return yield* fail("the model is empty")

      const prompt = fill(config.prompt ?? "", textOf)
      if (config.mode === "image" && prompt.trim() === "") return yield* fail("the prompt is empty")
      const body = config.mode === "chat"
        ? {
          model,
          messages: (config.messages ?? []).map((m) => ({ role: m.role, content: fill(m.content, textOf) })),
          ...(config.temperature === undefined ? {} : { temperature: config.temperature }),
          ...(config.maxTokens === undefined ? {} : { max_tokens: config.maxTokens }),
          ...(config.maxCompletionTokens === undefined ? {} : { max_completion_tokens: config.maxCompletionTokens })
        }
        : {
          model,
          prompt,
          n: 1,
          ...(config.size === undefined ? {} : { size: config.size }),
          ...(config.quality === undefined ? {} : { quality: config.quality }),
          ...(config.responseFormat === undefined ? {} : { response_format: config.responseFormat })
        }

      const url = `${baseUrl}/${config.mode === "chat" ? "chat/completions" : "images/generations"}`
      const what = `POST ${ProviderHttp.hostOf(url)}`
      // A model can take minutes: the config may set a longer limit than the operator's default (up to 10 min).
      const timeoutMs = config.timeoutMs ?? settings.http.timeoutMs
      const began = yield* Clock.currentTimeMillis
      yield* log(`${what} (${config.mode === "chat" ? "chat completion" : "image generation"}, model ${model})`)
      const response = yield* ProviderHttp.send(
        { method: "POST", url, headers, json: body, timeout: timeoutMs, maxResponseBytes: settings.http.maxBytes },
        // Each request makes (and bills) a generation: repeated only when it surely was not taken.
        { log, retry: ProviderHttp.retryPolicyOf(config.retry), creates: true }
      ).pipe(Effect.tapError((failure) => log(`${what}: ${failure.message}`, "error")))
      const ok = response.status >= 200 && response.status < 300
      yield* log(
        `${what}: ${ProviderHttp.statusText(response.status)} in ${(yield* Clock.currentTimeMillis) - began} ms, ${
          formatBytes(response.body.length)
        }`,
        ok ? "info" : "error"
      )
      if (!ok) {
        // The body may echo what was sent, the token included: masked before its message is cut.
        const body = yield* Redactor.text(new TextDecoder("utf-8", { fatal: false }).decode(response.body))
        const message = answeredMessage(response.status, body, config, model, config.secret !== null)
        yield* Effect.logWarning(`provider.openai: ${message}: ${yield* ProviderHttp.snippet(response.body)}`)
        return yield* fail(message)
      }
      const answer = yield* ProviderHttp.jsonOf(response)
      if (config.mode === "chat") return NodeType.NodeValue.text(yield* chatText(answer))
      const image = yield* generatedImage(answer)
      yield* log(`image: ${image.contentType.slice(6)}, ${formatBytes(image.bytes.length)}`)
      return NodeType.NodeValue.media("image", image.contentType, image.bytes)
    })
})
