/**
 * An asynchronous job at a provider, as `http.job`, `provider.replicate` and `provider.fal` run
 * it: a submit request, then the job's status polled with backoff until it is a success or a
 * failure value, then the result (from the final status answer, or from a request of its own)
 * turned into text, JSON, a URL or stored media. When the node stops before the job ended (the
 * execution was canceled or timed out, the node's own time limit passed, polling failed), the
 * job's cancel request is sent, within a short time of its own, so that the provider stops
 * working and billing.
 *
 * Every request goes through `ProviderHttp` (guarded, retried, logged by method and host only);
 * a POST or PATCH submit is retried only when it surely did not create the job (`creates`).
 * URLs read from a provider's answer must be on the submit URL's origin: they receive the same
 * headers, secrets included. Media URLs of the result get no headers and may be anywhere the
 * guard allows. Texts a consumer sees (a job's error, an error answer's detail) are taken from a
 * pointer, never a whole body, masked by the redactor before they are trimmed.
 */
import { NodeType, Redactor } from "@appexec/core"
import { pick } from "@appexec/core/JsonPointer"
import { Clock, Duration, Effect, Either, Exit, Fiber, Option } from "effect"
import { fetchMedia, formatBytes, kindOf, mediaTypeOf } from "../Media.js"
import { NodesSettings } from "../NodesSettings.js"
import * as ProviderHttp from "./ProviderHttp.js"
import type { Headers } from "./SecretHeaders.js"

/**
 * Where a later request goes: the URL at a pointer of the submit answer (`from`), or a URL
 * written in the config whose `{id}` is the job's id (`template`).
 */
export type Target =
  | { readonly _tag: "From"; readonly pointer: string }
  | { readonly _tag: "Template"; readonly url: string }

/** What the node yields. */
export type Output = "text" | "json" | "url" | "media"

/** A job, ready to run. */
export interface Plan {
  /** What the log and errors call the job: `prediction`, `request`, `job`. */
  readonly noun: string
  readonly submit: {
    readonly method: "GET" | "POST" | "PUT" | "PATCH"
    readonly url: string
    readonly json?: unknown
    /** Headers of the submit request alone (`Prefer: wait`), besides `headers`. */
    readonly headers?: Headers
  }
  /** Headers of every request to the provider (not of media downloads). */
  readonly headers: Headers
  /** The names of the secrets in `headers`, for the hint of a refused token. */
  readonly secretNames: ReadonlyArray<string>
  /** Pointer of the job's id in the submit answer, for `{id}` in templates. */
  readonly id?: string
  /** Pointer of a readable error text in a non-2xx answer of the provider (`/detail`). */
  readonly answerError?: string
  readonly status: {
    readonly target: Target
    readonly method: "GET" | "POST"
    /** Pointer of the job's state in a status answer (and in the submit answer, when it has one). */
    readonly pointer: string
    readonly success: ReadonlyArray<string>
    readonly failure: ReadonlyArray<string>
    /** Pointer of the job's error text in a status answer. */
    readonly error?: string
    /** First wait before a status request, then ×1.5 each time up to `maxWait`. */
    readonly firstWait: Duration.DurationInput
    readonly maxWait: Duration.DurationInput
  }
  readonly result: {
    /** A request for the result; absent: the result is in the final status answer. */
    readonly target?: Target
    /** Pointer of the result in its answer (`""`: the whole answer). */
    readonly pick: string
    readonly output: Output
    /** A result answer that looks transient but is final (`ProviderHttp.SendOptions.isFinal`). */
    readonly isFinal?: ProviderHttp.SendOptions["isFinal"]
  }
  readonly cancel?: { readonly target: Target; readonly method: "GET" | "POST" | "PUT" | "DELETE" }
  /** Time limit of each request. */
  readonly requestTimeout: Duration.DurationInput
  /** Time limit of the whole job, submit to result. */
  readonly timeout: Duration.DurationInput
  readonly retry: ProviderHttp.RetryPolicy
}

/** The time a cancel request may take: it runs while the node stops. */
export const CANCEL_TIMEOUT = Duration.seconds(10)

const fail = (message: string) => new NodeType.NodeFailure({ message })

/**
 * A readable text from an error value: a string, the `msg`s of a validation list (FastAPI's
 * `detail`), an object's `message`/`msg`/`detail`, else its JSON; masked (`redact`, before it is
 * cut: a secret cut in two would no longer be found), one line, at most 300 characters.
 */
export const errorText = (value: unknown, redact: (text: string) => string): string | undefined => {
  const textOf = (v: unknown): string | undefined => {
    if (v === null || v === undefined) return undefined
    if (typeof v === "string") return v
    if (Array.isArray(v)) {
      const parts = v.map(textOf).filter((t): t is string => t !== undefined && t.trim() !== "")
      return parts.length === 0 ? undefined : parts.join("; ")
    }
    if (typeof v === "object") {
      for (const key of ["message", "msg", "detail", "error"]) {
        const inner = (v as Record<string, unknown>)[key]
        if (typeof inner === "string" && inner.trim() !== "") return inner
      }
      return JSON.stringify(v)
    }
    return String(v)
  }
  const text = textOf(value)
  if (text === undefined) return undefined
  const line = redact(text).replace(/\s+/g, " ").trim()
  if (line === "") return undefined
  return line.length > 300 ? `${line.slice(0, 300)}…` : line
}

/** The URL of `target` for the job whose submit answer is `submitted`, or why there is none. */
const urlOf = (plan: Plan, target: Target, submitted: unknown, role: string): Either.Either<string, string> => {
  let url: string
  if (target._tag === "From") {
    const found = pick(submitted, target.pointer)
    if (Option.isNone(found) || typeof found.value !== "string" || found.value === "") {
      return Either.left(`the provider's answer has no ${role} URL at ${target.pointer}`)
    }
    url = found.value
  } else if (target.url.includes("{id}")) {
    const found = plan.id === undefined ? Option.none() : pick(submitted, plan.id)
    if (Option.isNone(found) || (typeof found.value !== "string" && typeof found.value !== "number")) {
      return Either.left(`the provider's answer has no job id at ${plan.id ?? "(no id pointer)"}`)
    }
    url = target.url.replaceAll("{id}", encodeURIComponent(String(found.value)))
  } else {
    url = target.url
  }
  // The provider's headers (its token) go with the request: only to the provider's own origin.
  if (ProviderHttp.originOf(url) !== ProviderHttp.originOf(plan.submit.url)) {
    return Either.left(`the provider's ${role} URL is not on the submit URL's origin, so it is not called`)
  }
  return Either.right(url)
}

/** The job's state in an answer, as text (a number or boolean as written). */
const stateOf = (document: unknown, pointer: string): string | undefined => {
  const found = pick(document, pointer)
  if (Option.isNone(found)) return undefined
  const value = found.value
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean"
    ? String(value)
    : undefined
}

/** Media from a `data:` URL (providers inline small files so), within the media size limit. */
const dataMedia = (url: string) =>
  Effect.gen(function*() {
    const { media: limits } = yield* NodesSettings
    const match = /^data:([^,]*?)(;base64)?,(.*)$/s.exec(url)
    if (match === null) return yield* fail("the result is a data: URL that cannot be read")
    const contentType = mediaTypeOf(match[1])
    const kind = kindOf(contentType)
    if (kind === undefined || contentType === "image/svg+xml") {
      return yield* fail(`the result is not media: a data: URL of ${contentType === "" ? "no type" : contentType}`)
    }
    const payload = match[3]!
    if ((match[2] === undefined ? payload.length : Math.floor(payload.length * 3 / 4)) > limits.maxBytes) {
      return yield* fail(`the result is larger than ${formatBytes(limits.maxBytes)}`)
    }
    const bytes = match[2] === undefined
      ? new TextEncoder().encode(decodeURIComponent(payload))
      : new Uint8Array(Buffer.from(payload, "base64"))
    return { kind, contentType, bytes }
  })

/** The node value of a result value, as `output` says. */
const valueOf = (value: unknown, output: Output, where: string) =>
  Effect.gen(function*() {
    switch (output) {
      case "json":
        return NodeType.NodeValue.json(value)
      case "text":
        // A language model on Replicate answers a list of tokens: they are the text, in order.
        return NodeType.NodeValue.text(
          typeof value === "string"
            ? value
            : Array.isArray(value) && value.every((v) => typeof v === "string")
            ? value.join("")
            : JSON.stringify(value)
        )
      case "url":
      case "media": {
        const first = Array.isArray(value) ? value[0] : value
        const url = typeof first === "string" ? first.trim() : ""
        if (output === "media" && url.startsWith("data:")) {
          const media = yield* dataMedia(url)
          return NodeType.NodeValue.media(media.kind, media.contentType, media.bytes)
        }
        if (ProviderHttp.originOf(url) === undefined) {
          return yield* fail(`the provider's result${where} is not an http(s) URL`)
        }
        if (output === "url") return NodeType.NodeValue.url(url)
        const media = yield* fetchMedia(url, { accept: ["image", "video", "audio"] }).pipe(
          Effect.mapError((failure) => fail(`the result could not be fetched: ${failure.message}`))
        )
        return NodeType.NodeValue.media(kindOf(media.contentType) ?? "image", media.contentType, media.bytes)
      }
    }
  })

/** Runs the job of `plan` for a node: its value, or a `NodeFailure` a consumer may read. */
export const run = (plan: Plan, log: ProviderHttp.SendOptions["log"]) =>
  Effect.gen(function*() {
    const { http: bounds } = yield* NodesSettings
    const redactor = yield* Redactor.Redactor
    const send = (
      method: ProviderHttp.ProviderRequest["method"],
      url: string,
      options: {
        readonly json?: unknown
        readonly headers?: Headers
        readonly isFinal?: Plan["result"]["isFinal"]
        readonly creates?: boolean
      } = {}
    ) =>
      ProviderHttp.send(
        {
          method,
          url,
          headers: { ...plan.headers, ...options.headers },
          ...(options.json === undefined ? {} : { json: options.json }),
          timeout: plan.requestTimeout,
          maxResponseBytes: bounds.maxBytes
        },
        {
          log,
          retry: plan.retry,
          ...(options.isFinal === undefined ? {} : { isFinal: options.isFinal }),
          ...(options.creates === true ? { creates: true } : {})
        }
      )

    /** The JSON of a 2xx answer; for another status, a failure with the status and the provider's error text. */
    const answerOf = (response: Parameters<typeof ProviderHttp.jsonOf>[0], what: string) =>
      Effect.gen(function*() {
        if (response.status >= 200 && response.status < 300) return yield* ProviderHttp.jsonOf(response)
        const status = ProviderHttp.statusText(response.status)
        yield* Effect.logWarning(`${plan.noun} at ${what}: ${status}: ${yield* ProviderHttp.snippet(response.body)}`)
        let detail: string | undefined
        if (plan.answerError !== undefined) {
          const parsed = yield* Effect.option(ProviderHttp.jsonOf(response))
          const found = Option.flatMap(parsed, (doc) => pick(doc, plan.answerError!))
          detail = Option.isSome(found) ? errorText(found.value, redactor.text) : undefined
        }
        const hint = (response.status === 401 || response.status === 403) && plan.secretNames.length > 0
          ? ` (check the secret ${plan.secretNames.join(", ")}: appexec secrets set ${plan.secretNames[0]})`
          : response.status === 429
          ? " (rate limited; the retries ran out)"
          : ""
        return yield* fail(`the provider answered ${status}${hint}${detail === undefined ? "" : `: ${detail}`}`)
      })

    const whatOf = (method: string, url: string) => `${method} ${ProviderHttp.hostOf(url)}`

    /** The job's cancel request, for the job whose submit answer is `submitted`; never fails. */
    const cancelOf = (submitted: unknown) =>
      plan.cancel === undefined
        ? Effect.void
        : Either.match(urlOf(plan, plan.cancel.target, submitted, "cancel"), {
          onLeft: (problem) => log(`the ${plan.noun} could not be canceled: ${problem}`, "warn"),
          onRight: (url) =>
            ProviderHttp.send(
              {
                method: plan.cancel!.method,
                url,
                headers: plan.headers,
                timeout: CANCEL_TIMEOUT,
                maxResponseBytes: 64 * 1024
              },
              { log, retry: { ...plan.retry, retries: 1, within: CANCEL_TIMEOUT } }
            ).pipe(
              Effect.flatMap((response) =>
                log(
                  `${whatOf(plan.cancel!.method, url)}: canceling the ${plan.noun}: ${
                    ProviderHttp.statusText(response.status)
                  }`,
                  response.status < 300 ? "info" : "warn"
                )
              ),
              Effect.catchAll((failure) => log(`canceling the ${plan.noun} failed: ${failure.message}`, "warn"))
            )
        })

    const job = Effect.gen(function*() {
      const submitWhat = whatOf(plan.submit.method, plan.submit.url)
      const began = yield* Clock.currentTimeMillis
      yield* log(`${submitWhat}: submitting the ${plan.noun}`)
      // The submit runs in a fiber of its own: when the node stops while it is under way (a
      // create held open by `Prefer: wait`), the job may already exist at the provider, so its
      // answer is still awaited, apart, and the job canceled as soon as it is known.
      const submitting = yield* Effect.forkDaemon(
        send(plan.submit.method, plan.submit.url, {
          ...(plan.submit.json === undefined ? {} : { json: plan.submit.json }),
          ...(plan.submit.headers === undefined ? {} : { headers: plan.submit.headers }),
          // A POST or PATCH creates the job: not repeated once it may have been taken (GET and PUT may be).
          creates: plan.submit.method === "POST" || plan.submit.method === "PATCH"
        })
      )
      const response = yield* Fiber.join(submitting).pipe(
        Effect.onInterrupt(() =>
          plan.cancel === undefined
            ? Effect.asVoid(Fiber.interrupt(submitting))
            : Effect.asVoid(Effect.forkDaemon(
              Fiber.join(submitting).pipe(
                Effect.flatMap((late) =>
                  late.status >= 200 && late.status < 300
                    ? Effect.flatMap(ProviderHttp.jsonOf(late), cancelOf)
                    : Effect.void
                ),
                Effect.ignore
              )
            ))
        )
      )
      const submitted = yield* answerOf(response, submitWhat)
      const idText = plan.id === undefined ? undefined : stateOf(submitted, plan.id)
      yield* log(
        `${plan.noun} submitted${idText === undefined ? "" : ` (${idText.slice(0, 64)})`} in ${
          (yield* Clock.currentTimeMillis) - began
        } ms`
      )

      // Whether the provider said the job ended: no cancel is sent then.
      let ended = false
      const cancel = cancelOf(submitted)

      const poll = Effect.gen(function*() {
        let document = submitted
        let state = stateOf(document, plan.status.pointer)
        let wait = Duration.toMillis(plan.status.firstWait)
        const maxWait = Duration.toMillis(plan.status.maxWait)
        let statusUrl: string | undefined
        let last = state
        if (state !== undefined) yield* log(`${plan.noun} ${state}`)
        while (state === undefined || !plan.status.success.includes(state)) {
          if (state !== undefined && plan.status.failure.includes(state)) {
            ended = true
            const found = plan.status.error === undefined ? Option.none() : pick(document, plan.status.error)
            const text = Option.isSome(found) ? errorText(found.value, redactor.text) : undefined
            yield* log(`${plan.noun} ${state}`, "error")
            return yield* fail(`the ${plan.noun} failed (status ${state})${text === undefined ? "" : `: ${text}`}`)
          }
          if (statusUrl === undefined) {
            const resolved = urlOf(plan, plan.status.target, submitted, "status")
            if (Either.isLeft(resolved)) return yield* fail(resolved.left)
            statusUrl = resolved.right
          }
          yield* Effect.sleep(Duration.millis(wait))
          wait = Math.min(maxWait, Math.round(wait * 1.5))
          document = yield* answerOf(
            yield* send(plan.status.method, statusUrl),
            whatOf(plan.status.method, statusUrl)
          )
          state = stateOf(document, plan.status.pointer)
          if (state === undefined) {
            return yield* fail(`the provider's status answer has no state at ${plan.status.pointer}`)
          }
          if (state !== last) {
            last = state
            if (!plan.status.failure.includes(state)) yield* log(`${plan.noun} ${state}`)
          }
        }
        ended = true
        return document
      })

      const final = yield* poll.pipe(
        Effect.onExit((exit) => (Exit.isSuccess(exit) || ended ? Effect.void : cancel))
      )

      let resultDocument: unknown = final
      if (plan.result.target !== undefined) {
        const resolved = urlOf(plan, plan.result.target, submitted, "result")
        if (Either.isLeft(resolved)) return yield* fail(resolved.left)
        const what = whatOf("GET", resolved.right)
        resultDocument = yield* answerOf(
          yield* send("GET", resolved.right, plan.result.isFinal === undefined ? {} : { isFinal: plan.result.isFinal }),
          what
        )
      }
      const picked = pick(resultDocument, plan.result.pick)
      if (Option.isNone(picked) || picked.value === null) {
        return yield* fail(`the provider's result has no value at ${plan.result.pick === "" ? "/" : plan.result.pick}`)
      }
      const value = yield* valueOf(picked.value, plan.result.output, ` at ${plan.result.pick}`)
      if (value._tag === "Media") {
        yield* log(`result: ${value.contentType}, ${formatBytes(value.bytes.length)}`)
      }
      return value
    })

    const limit = Duration.toMillis(plan.timeout)
    return yield* job.pipe(
      Effect.timeoutFail({
        duration: limit,
        onTimeout: () =>
          fail(
            `the ${plan.noun} did not finish within ${ProviderHttp.formatWait(limit)}${
              plan.cancel === undefined ? "" : "; it was canceled"
            }`
          )
      }),
      Effect.tapError((failure) => log(failure.message, "error"))
    )
  })
