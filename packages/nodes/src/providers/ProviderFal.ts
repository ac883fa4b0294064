/**
 * `provider.fal`: a request on fal's queue (https://fal.ai/docs/model-endpoints/queue).
 * `POST {baseUrl}/{model}` with the input as the body answers `request_id`, `status_url`,
 * `response_url` and `cancel_url`; the status is polled until `COMPLETED` (after `IN_QUEUE` and
 * `IN_PROGRESS`), then the result is read at `response_url`: an error answer there is the
 * request's failure, its `detail` shown. The request is canceled with `PUT cancel_url` when the
 * node stops first. The result is the field at `pick` (`/images/0/url` by default; `/video/url`
 * for a video model) as media (fetched and kept), text, JSON or a URL. The key is the operator's
 * secret `FAL_KEY` (or the one `secret` names), sent as `Authorization: Key`.
 */
import { Duration, Schema } from "effect"
import * as HostedModel from "../internal/HostedModel.js"
import * as Job from "../internal/Job.js"
import * as ProviderHttp from "../internal/ProviderHttp.js"
import * as RequestNode from "../internal/RequestNode.js"
import { fillJson } from "../internal/template.js"

/** The secret a node uses when its config names none. */
export const DEFAULT_SECRET = "FAL_KEY"

/** fal's queue root. */
export const DEFAULT_BASE_URL = "https://queue.fal.run"

/** A model id: `owner/name`, with an optional endpoint path (`fal-ai/flux/schnell`). */
const MODEL = /^[a-z0-9][a-z0-9_.-]*(\/[a-z0-9][a-z0-9_.-]*)+$/i

/** The config of `provider.fal`. */
export const Config = Schema.Struct({
  /** The model's id, such as `fal-ai/flux/schnell`. */
  model: Schema.String.pipe(
    Schema.pattern(MODEL, { message: () => "a model id such as fal-ai/flux/schnell" }),
    Schema.filter((m) => !m.split("/").some((s) => s === "." || s === ".."), { message: () => "no . or .. segments" })
  ),
  ...HostedModel.fields(DEFAULT_SECRET)
})
export type Config = typeof Config.Type

/** `provider.fal`: runs a model on fal's queue and yields its result. */
export const providerFal = RequestNode.define({
  type: "provider.fal",
  description:
    "Runs a model on fal's queue (submitted, polled, its result fetched, canceled when the execution stops) and yields the result as media, text, JSON or a URL.",
  config: Config,
  ...HostedModel.header("Key"),
  problems: (config) => RequestNode.baseUrlProblems(config.baseUrl),
  run: ({ config, headers, jsonOf, log, secretNames, settings, textOf }) =>
    Job.run(
      {
        noun: "request",
        submit: {
          method: "POST",
          url: `${RequestNode.apiRoot(config.baseUrl, DEFAULT_BASE_URL)}/${config.model}`,
          json: fillJson(config.input, textOf, jsonOf)
        },
        headers,
        secretNames,
        id: "/request_id",
        answerError: "/detail",
        status: {
          target: { _tag: "From", pointer: "/status_url" },
          method: "GET",
          pointer: "/status",
          success: ["COMPLETED"],
          failure: [],
          firstWait: Duration.seconds(1),
          maxWait: Duration.seconds(10)
        },
        result: {
          target: { _tag: "From", pointer: "/response_url" },
          pick: config.pick ?? "/images/0/url",
          output: config.output,
          // A failed request's answer is kept at response_url, with its error type in a header.
          isFinal: (response) => response.headers["x-fal-error-type"] !== undefined
        },
        cancel: { target: { _tag: "From", pointer: "/cancel_url" }, method: "PUT" },
        requestTimeout: Duration.millis(settings.http.timeoutMs),
        timeout: Duration.millis(config.timeoutMs ?? 600_000),
        retry: ProviderHttp.retryPolicyOf(config.retry)
      },
      log
    )
})
