/**
 * `http.request`: calls an external HTTP API, the way an operator plugs in a model provider
 * without writing code. The method, URL and JSON body are templated from upstream values;
 * headers are written in the definition or taken from the operator's named secrets, never from
 * inputs (`SecretHeaders`: a secret set with `appexec secrets set`, else one of the node
 * settings), and stay `Redacted` until the request is written. The answer's field at a JSON
 * Pointer becomes text, a media URL, or JSON. Every call goes through the guarded outbound HTTP
 * port, within time and size bounds. Failures tell the consumer the category and the status only;
 * an error body's excerpt goes to the operator's log. A secret the endpoint echoes, in an error
 * body or in its answer, is masked by the redactor wherever it would be written.
 */
import { NodeType, OutboundHttp } from "@appexec/core"
import { isPointer, pick } from "@appexec/core/JsonPointer"
import { Clock, Effect, Option, Schema } from "effect"
import { STATUS_CODES } from "node:http"
import * as ProviderHttp from "../internal/ProviderHttp.js"
import * as RequestNode from "../internal/RequestNode.js"
import type * as SecretHeaders from "../internal/SecretHeaders.js"
import { fill, fillJson, placeholdersIn, placeholdersOf } from "../internal/template.js"
import { formatBytes } from "../Media.js"

/** A header whose value is a named secret of the operator, with an optional prefix (`"Bearer "`). */
export const SecretHeader = Schema.Struct({
  secret: Schema.NonEmptyString,
  prefix: Schema.optional(Schema.String)
})

/** The config of `http.request`. */
export const Config = Schema.Struct({
  /** HTTP method; POST when a body is given, else GET. */
  method: Schema.optional(Schema.Literal("GET", "POST", "PUT", "PATCH", "DELETE")),
  /** Absolute http(s) URL; `{{nodeId}}` placeholders in path and query are filled URL-encoded. */
  url: Schema.NonEmptyString,
  /** JSON body; `{{nodeId}}` placeholders in its strings are filled (a string that is only a placeholder takes the node's JSON value). */
  body: Schema.optional(Schema.Unknown),
  /** Request headers: a literal string, or `{ "secret": name, "prefix"?: "Bearer " }`. */
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Union(Schema.String, SecretHeader) })),
  /** JSON Pointer (RFC 6901) of the field of the JSON answer to yield, such as `/data/0/url`; the whole answer when absent. */
  pick: Schema.optional(
    Schema.String.pipe(Schema.filter(isPointer, { message: () => "a JSON Pointer such as /data/0/url" }))
  ),
  /** What the node yields: `text` (default), `url` (a media URL for image or media outputs) or `json`. */
  output: Schema.optionalWith(Schema.Literal("text", "url", "json"), { default: () => "text" as const }),
  /** Time limit in milliseconds; the operator's setting when absent, and never above it. */
  timeoutMs: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1, 600_000)))
})
export type Config = typeof Config.Type

/** The import-time problems of a config besides its placeholders. */
const problemsOf = (config: Config): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const { problem } = RequestNode.templatedOrigin("url", config.url)
  if (problem !== undefined) problems.push(problem)
  problems.push(...RequestNode.headerProblems(config.headers))
  if ((config.method ?? "POST") === "GET" && config.body !== undefined) problems.push("a GET request has no body")
  return problems
}

const fail = (message: string) => Effect.fail(new NodeType.NodeFailure({ message }))

/** `http.request`: calls an HTTP API and yields a field of its answer. */
export const httpRequest = RequestNode.define({
  type: "http.request",
  description:
    "Calls an HTTP API (URL and JSON body templated from upstream values, headers from secrets) and yields a field of the answer.",
  config: Config,
  placeholders: (config) => [...placeholdersOf(config.url), ...placeholdersIn(config.body)],
  headers: (config) => config.headers,
  problems: problemsOf,
  run: ({ config, headers: resolved, jsonOf, log, settings, textOf }) =>
    Effect.gen(function*() {
      const http = yield* OutboundHttp.OutboundHttp
      const headers: Record<string, SecretHeaders.Headers[string]> = { ...resolved }
      const body = config.body === undefined ? undefined : JSON.stringify(fillJson(config.body, textOf, jsonOf))
      if (body !== undefined) headers["content-type"] ??= "application/json"
      if (config.pick !== undefined || config.output === "json") headers["accept"] ??= "application/json"
      const method = config.method ?? (body === undefined ? "GET" : "POST")
      const timeoutMs = Math.min(config.timeoutMs ?? settings.http.timeoutMs, settings.http.timeoutMs)

      const target = fill(config.url, (id) => encodeURIComponent(textOf(id)))
      // The execution's log names the method and host only: a path or query may carry what a
      // consumer sent, headers and bodies may carry secrets.
      const host = ProviderHttp.hostOf(target)
      const began = yield* Clock.currentTimeMillis
      yield* log(`${method} ${host}`)
      const response = yield* http
        .request({
          method,
          url: target,
          headers,
          ...(body === undefined ? {} : { body }),
          timeoutMs,
          maxResponseBytes: settings.http.maxBytes
        })
        .pipe(
          Effect.catchTag(
            "OutboundError",
            (error) => fail(ProviderHttp.failureOf(error, target, http, timeoutMs, settings.http.maxBytes))
          ),
          Effect.tapError((failure) => log(`${method} ${host}: ${failure.message}`, "error"))
        )
      const reason = STATUS_CODES[response.status]
      const ok = response.status >= 200 && response.status < 300
      yield* log(
        `${method} ${host}: ${response.status}${reason === undefined ? "" : ` ${reason}`} in ${
          (yield* Clock.currentTimeMillis) - began
        } ms, ${formatBytes(response.body.length)}`,
        ok ? "info" : "error"
      )
      if (!ok) {
        const answered = `the endpoint answered ${response.status}${reason === undefined ? "" : ` ${reason}`}`
        yield* Effect.logWarning(`http.request: ${answered}: ${yield* ProviderHttp.snippet(response.body)}`)
        return yield* fail(answered)
      }

      const text = new TextDecoder().decode(response.body)
      const needsJson = config.pick !== undefined || config.output === "json"
      let answer: unknown = text
      if (needsJson) {
        const parsed = yield* Effect.try({
          try: (): unknown => JSON.parse(text),
          catch: () => new NodeType.NodeFailure({ message: "the endpoint's answer is not JSON" })
        })
        const picked = pick(parsed, config.pick ?? "")
        if (Option.isNone(picked)) return yield* fail(`the endpoint's answer has no field at ${config.pick}`)
        answer = picked.value
      }
      switch (config.output) {
        case "json":
          return NodeType.NodeValue.json(answer)
        case "text":
          return NodeType.NodeValue.text(typeof answer === "string" ? answer : JSON.stringify(answer))
        case "url": {
          const url = typeof answer === "string" ? answer.trim() : ""
          if (ProviderHttp.originOf(url) === undefined) {
            return yield* fail(
              `the endpoint's answer${config.pick === undefined ? "" : ` at ${config.pick}`} is not an http(s) URL`
            )
          }
          return NodeType.NodeValue.url(url)
        }
      }
    })
})
