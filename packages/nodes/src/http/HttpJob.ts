/**
 * `http.job`: an asynchronous call to an HTTP API, written in config alone. A submit request (as
 * `http.request`: URL and JSON body templated from upstream values), then a status request made
 * from the submit answer (the URL at a pointer of it, or a URL written with `{id}`, the job's id
 * at a pointer), polled with backoff until the state at a pointer is a success or a failure
 * value; then the result at a pointer, of the final status answer or of a result request, as
 * text, JSON, a URL or media fetched and stored. A cancel request, when the API has one, is sent
 * when the node stops before the job ended (execution canceled or timed out, the node's own time
 * limit). Headers may name the operator's secrets (`{ "secret": "NAME", "prefix": "Bearer " }`),
 * read for the execution's workspace (`appexec secrets set NAME`, `SecretHeaders`).
 *
 * Requests go through `ProviderHttp` (guarded; 429, 502–504, resets and timeouts retried, each a
 * line of the execution's log), and only to the submit URL's origin: a URL read from an answer on
 * another origin is refused, since it would receive the headers.
 */
import { SecretStore } from "@appexec/core"
import { isPointer } from "@appexec/core/JsonPointer"
import { Duration, Schema } from "effect"
import * as Job from "../internal/Job.js"
import * as ProviderHttp from "../internal/ProviderHttp.js"
import * as RequestNode from "../internal/RequestNode.js"
import { fill, fillJson, placeholdersIn, placeholdersOf } from "../internal/template.js"

/** A JSON Pointer (RFC 6901), such as `/urls/get`. */
export const Pointer = Schema.String.pipe(
  Schema.filter(isPointer, { message: () => "a JSON Pointer such as /urls/get" })
)

/** A header whose value is the operator's secret `secret` (`appexec secrets set`), after an optional prefix. */
export const SecretHeader = Schema.Struct({
  secret: SecretStore.SecretName,
  prefix: Schema.optional(Schema.String)
})

/** Where a later request goes: `urlFrom` (a pointer of the submit answer) or `url` (written, with `{id}`). */
const target = {
  /** An absolute URL on the submit URL's origin; `{id}` is the job's id (see `id`). */
  url: Schema.optional(Schema.NonEmptyString),
  /** Pointer of the URL in the submit answer, such as `/urls/get`. */
  urlFrom: Schema.optional(Pointer)
}

const Millis = (min: number, max: number) => Schema.Number.pipe(Schema.int(), Schema.between(min, max))

/** The config of `http.job`. */
export const Config = Schema.Struct({
  /** The request that starts the job, templated as `http.request`'s. */
  submit: Schema.Struct({
    method: Schema.optional(Schema.Literal("GET", "POST", "PUT", "PATCH")),
    url: Schema.NonEmptyString,
    body: Schema.optional(Schema.Unknown)
  }),
  /** Headers of every request to the API: a literal string or a secret. */
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Union(Schema.String, SecretHeader) })),
  /** Pointer of the job's id in the submit answer, for `{id}` in URLs. */
  id: Schema.optional(Pointer),
  /** The status request and how its answer is read. */
  status: Schema.Struct({
    ...target,
    method: Schema.optional(Schema.Literal("GET", "POST")),
    /** Pointer of the job's state, such as `/status`. */
    pointer: Pointer,
    /** States that mean the job succeeded. */
    success: Schema.NonEmptyArray(Schema.String),
    /** States that mean the job failed or was canceled. */
    failure: Schema.optional(Schema.Array(Schema.String)),
    /** Pointer of the job's error text in a status answer, shown in the node's failure. */
    error: Schema.optional(Pointer),
    /** First wait before a status request, in ms (default 1000); each next one is 1.5 times longer. */
    intervalMs: Schema.optional(Millis(100, 60_000)),
    /** Longest wait between two status requests, in ms (default 10000). */
    maxIntervalMs: Schema.optional(Millis(100, 300_000))
  }),
  /** The result: from the final status answer, or from a request of its own (`url`/`urlFrom`). */
  result: Schema.Struct({
    ...target,
    /** Pointer of the result, such as `/output/0`; the whole answer when absent. */
    pick: Schema.optional(Pointer),
    /** `text` (default), `json`, `url`, or `media` (the URL fetched and kept as image, video or audio). */
    output: Schema.optionalWith(Schema.Literal("text", "json", "url", "media"), { default: () => "text" as const })
  }),
  /** The request that cancels the job, sent when the node stops before the job ended. */
  cancel: Schema.optional(Schema.Struct({
    ...target,
    method: Schema.optionalWith(Schema.Literal("GET", "POST", "PUT", "DELETE"), { default: () => "POST" as const })
  })),
  /** Pointer of a readable error text in an error answer of the API (`/detail`), shown in the node's failure. */
  answerError: Schema.optional(Pointer),
  /** Time limit of the whole job in ms (default 600000, 10 minutes). */
  timeoutMs: Schema.optional(Millis(1000, 6 * 60 * 60 * 1000)),
  /** Time limit of each request in ms; the operator's `http` limit when absent, and never above it. */
  requestTimeoutMs: Schema.optional(Millis(1, 600_000)),
  /** Retries of transient failures: `count` (0–10, default 4) within `withinMs` (default 2 minutes). */
  retry: Schema.optional(ProviderHttp.RetryConfig)
})
export type Config = typeof Config.Type

/** The problems of a `url`/`urlFrom` pair of `role`, given the submit URL's origin. */
const targetProblems = (
  role: string,
  t: { readonly url?: string | undefined; readonly urlFrom?: string | undefined },
  origin: string | undefined,
  hasId: boolean,
  required: boolean
): ReadonlyArray<string> => {
  if (t.url !== undefined && t.urlFrom !== undefined) return [`${role}: give url or urlFrom, not both`]
  if (t.url === undefined) {
    return t.urlFrom === undefined && required ? [`${role}: give url (with {id}) or urlFrom (a pointer)`] : []
  }
  const problems: Array<string> = []
  if (t.url.includes("{{")) problems.push(`${role}.url is never filled from inputs; {id} is the job's id`)
  const written = ProviderHttp.originOf(t.url.replaceAll("{id}", "x"))
  if (written === undefined) problems.push(`${role}.url must be an absolute http or https URL`)
  else if (origin !== undefined && written !== origin) {
    problems.push(`${role}.url must be on the submit URL's origin (${origin}), which receives the headers`)
  }
  if (t.url.includes("{id}") && !hasId) problems.push(`${role}.url has {id}: give id, the pointer of the job's id`)
  return problems
}

/** The import-time problems of a config besides its placeholders. */
const problemsOf = (config: Config): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const { origin: a, problem } = RequestNode.templatedOrigin("submit.url", config.submit.url)
  if (problem !== undefined) problems.push(problem)
  if (config.submit.method === "GET" && config.submit.body !== undefined) problems.push("a GET submit has no body")
  problems.push(...RequestNode.headerProblems(config.headers))
  const hasId = config.id !== undefined
  problems.push(...targetProblems("status", config.status, a, hasId, true))
  problems.push(...targetProblems("result", config.result, a, hasId, false))
  if (config.cancel !== undefined) problems.push(...targetProblems("cancel", config.cancel, a, hasId, true))
  const both = config.status.success.filter((s) => (config.status.failure ?? []).includes(s))
  if (both.length > 0) problems.push(`status: ${both.join(", ")} cannot be both a success and a failure`)
  if ((config.status.maxIntervalMs ?? 10_000) < (config.status.intervalMs ?? 1000)) {
    problems.push("status.maxIntervalMs must not be less than status.intervalMs")
  }
  return problems
}

const targetOf = (t: { readonly url?: string | undefined; readonly urlFrom?: string | undefined }): Job.Target =>
  t.url !== undefined ? { _tag: "Template", url: t.url } : { _tag: "From", pointer: t.urlFrom! }

/** `http.job`: submits a job to an HTTP API, polls it to its end, and yields its result. */
export const httpJob = RequestNode.define({
  type: "http.job",
  description:
    "Submits a job to an HTTP API, polls its status until it succeeds or fails, yields its result (text, JSON, URL or media); cancels it when the execution stops.",
  config: Config,
  placeholders: (config) => [...placeholdersOf(config.submit.url), ...placeholdersIn(config.submit.body)],
  headers: (config) => config.headers,
  problems: problemsOf,
  run: ({ config, headers, jsonOf, log, secretNames, settings, textOf }) =>
    Job.run({
      noun: "job",
      submit: {
        method: config.submit.method ?? (config.submit.body === undefined ? "GET" : "POST"),
        url: fill(config.submit.url, (id) => encodeURIComponent(textOf(id))),
        ...(config.submit.body === undefined ? {} : { json: fillJson(config.submit.body, textOf, jsonOf) })
      },
      headers,
      secretNames,
      ...(config.id === undefined ? {} : { id: config.id }),
      ...(config.answerError === undefined ? {} : { answerError: config.answerError }),
      status: {
        target: targetOf(config.status),
        method: config.status.method ?? "GET",
        pointer: config.status.pointer,
        success: config.status.success,
        failure: config.status.failure ?? [],
        ...(config.status.error === undefined ? {} : { error: config.status.error }),
        firstWait: Duration.millis(config.status.intervalMs ?? 1000),
        maxWait: Duration.millis(config.status.maxIntervalMs ?? 10_000)
      },
      result: {
        ...(config.result.url === undefined && config.result.urlFrom === undefined
          ? {}
          : { target: targetOf(config.result) }),
        pick: config.result.pick ?? "",
        output: config.result.output
      },
      ...(config.cancel === undefined
        ? {}
        : { cancel: { target: targetOf(config.cancel), method: config.cancel.method } }),
      requestTimeout: Duration.millis(
        Math.min(config.requestTimeoutMs ?? settings.http.timeoutMs, settings.http.timeoutMs)
      ),
      timeout: Duration.millis(config.timeoutMs ?? 600_000),
      retry: ProviderHttp.retryPolicyOf(config.retry)
    }, log)
})
