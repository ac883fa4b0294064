/**
 * `provider.replicate`: a prediction on Replicate (https://replicate.com/docs/reference/http).
 * `POST {baseUrl}/v1/models/{owner}/{name}/predictions` with `{ input }` for a model, or
 * `POST {baseUrl}/v1/predictions` with `{ version, input }` for a version, sent with
 * `Prefer: wait=N` so that a quick model answers at once; a prediction still running is polled at
 * `urls.get` until its `status` is `succeeded` (or `failed`, `canceled`, `aborted`: the node
 * fails with the prediction's `error`), and canceled at `urls.cancel` when the node stops first.
 * The result is `output` (or the field at `pick`): media (a file URL or `data:` URL fetched and
 * kept), text (a list of tokens joined), JSON or a URL. The token is the operator's secret
 * `REPLICATE_API_TOKEN` (or the one `secret` names), sent as `Authorization: Bearer`.
 */
import { Duration, Schema } from "effect"
import * as HostedModel from "../internal/HostedModel.js"
import * as Job from "../internal/Job.js"
import * as ProviderHttp from "../internal/ProviderHttp.js"
import * as RequestNode from "../internal/RequestNode.js"
import { fillJson } from "../internal/template.js"

/** The secret a node uses when its config names none. */
export const DEFAULT_SECRET = "REPLICATE_API_TOKEN"

/** Replicate's API root. */
export const DEFAULT_BASE_URL = "https://api.replicate.com"

const MODEL = /^[a-z0-9][a-z0-9_.-]*\/[a-z0-9][a-z0-9_.-]*$/i
const VERSION = /^([a-z0-9][a-z0-9_.-]*\/[a-z0-9][a-z0-9_.-]*:)?[a-f0-9]{64}$/i

/** The config of `provider.replicate`. */
export const Config = Schema.Struct({
  /** An official or any public model, `owner/name` (its latest version runs). */
  model: Schema.optional(
    Schema.String.pipe(
      Schema.pattern(MODEL, { message: () => "a model as owner/name, such as black-forest-labs/flux-schnell" })
    )
  ),
  /** A model version: its 64-hex-digit id, optionally after `owner/name:`. */
  version: Schema.optional(
    Schema.String.pipe(Schema.pattern(VERSION, { message: () => "a version id of 64 hex digits (or owner/name:id)" }))
  ),
  ...HostedModel.fields(DEFAULT_SECRET),
  /** Seconds the create request waits for the prediction (`Prefer: wait`), 1–60 (default 30). */
  waitSeconds: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1, 60)))
})
export type Config = typeof Config.Type

/** `provider.replicate`: runs a prediction on Replicate and yields its output. */
export const providerReplicate = RequestNode.define({
  type: "provider.replicate",
  description:
    "Runs a model on Replicate (a prediction: created, waited on, polled, canceled when the execution stops) and yields its output as media, text, JSON or a URL.",
  config: Config,
  ...HostedModel.header("Bearer"),
  problems: (config) => [
    ...((config.model === undefined) === (config.version === undefined) ? ["give model or version (one)"] : []),
    ...RequestNode.baseUrlProblems(config.baseUrl)
  ],
  run: ({ config, headers, jsonOf, log, secretNames, settings, textOf }) => {
    const base = RequestNode.apiRoot(config.baseUrl, DEFAULT_BASE_URL)
    const input = fillJson(config.input, textOf, jsonOf)
    const requestTimeout = settings.http.timeoutMs
    // The wait is the server's; the request's own time limit must outlast it.
    const wait = Math.max(1, Math.min(config.waitSeconds ?? 30, Math.floor(requestTimeout / 1000) - 5))
    const submit = config.model !== undefined
      ? { url: `${base}/v1/models/${config.model}/predictions`, json: { input } }
      : { url: `${base}/v1/predictions`, json: { version: config.version!.split(":").at(-1), input } }
    return Job.run(
      {
        noun: "prediction",
        submit: { method: "POST", ...submit, headers: { prefer: `wait=${wait}` } },
        headers,
        secretNames,
        id: "/id",
        answerError: "/detail",
        status: {
          target: { _tag: "From", pointer: "/urls/get" },
          method: "GET",
          pointer: "/status",
          success: ["succeeded"],
          failure: ["failed", "canceled", "aborted"],
          error: "/error",
          firstWait: Duration.seconds(1),
          maxWait: Duration.seconds(10)
        },
        result: { pick: config.pick ?? "/output", output: config.output },
        cancel: { target: { _tag: "From", pointer: "/urls/cancel" }, method: "POST" },
        requestTimeout: Duration.millis(requestTimeout),
        timeout: Duration.millis(config.timeoutMs ?? 600_000),
        retry: ProviderHttp.retryPolicyOf(config.retry)
      },
      log
    )
  }
})
