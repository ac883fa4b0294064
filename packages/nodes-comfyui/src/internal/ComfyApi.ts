/**
 * The HTTP side of ComfyUI's API as `provider.comfyui` uses it, over the guarded outbound
 * client: what a server knows of a prompt (`/api/jobs/{id}` where it exists, else `/history/{id}`
 * and `/queue`), a prompt's submit, an input's upload (multipart `/upload/image`), an output's
 * download (`/view`), and the two cancels (`/queue {delete}` while queued, `/interrupt
 * {prompt_id}` while running). Answers are decoded with Schema; a failure is a `NodeFailure`
 * whose message names the server's host, never a path or a body.
 */
import { NodeType, OutboundHttp } from "@appexec/core"
import { Duration, Effect, Either, Option, type Redacted, Schema } from "effect"

/** Largest JSON answer read (history entries hold the whole prompt). */
const MAX_JSON = 16 * 1024 * 1024

/** A file a run wrote, as history lists it. */
export const FileRef = Schema.Struct({ filename: Schema.String, subfolder: Schema.String, type: Schema.String })
export type FileRef = typeof FileRef.Type

const HistoryEntry = Schema.Struct({
  outputs: Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Schema.Unknown }) }),
  status: Schema.optional(Schema.Struct({
    status_str: Schema.String,
    messages: Schema.Array(Schema.Tuple(Schema.String, Schema.Unknown))
  }))
})
/** A finished prompt in `/history`. */
export type HistoryEntry = typeof HistoryEntry.Type

const Job = Schema.Struct({ status: Schema.String })
const Queue = Schema.Struct({
  queue_running: Schema.Array(Schema.Array(Schema.Unknown)),
  queue_pending: Schema.Array(Schema.Array(Schema.Unknown))
})
const Submitted = Schema.Struct({ prompt_id: Schema.String })
const Refused = Schema.Struct({
  error: Schema.Union(
    Schema.String,
    Schema.Struct({ message: Schema.String, details: Schema.optional(Schema.String) })
  ),
  node_errors: Schema.optional(Schema.Unknown)
})
const Uploaded = Schema.Struct({ name: Schema.String, subfolder: Schema.String, type: Schema.String })

/** What a server knows of a prompt. */
export type Known =
  | { readonly _tag: "Unknown" }
  | { readonly _tag: "Queued" }
  | { readonly _tag: "Running" }
  | { readonly _tag: "Done"; readonly entry: HistoryEntry }

/** A server, the request time limit and the headers of every request, as every call takes them. */
export interface Server {
  readonly url: string
  readonly timeout: Duration.DurationInput
  /** Sent with every request (`authorization` for a server behind a proxy); secret values stay redacted. */
  readonly headers: Readonly<Record<string, string | Redacted.Redacted<string>>>
  /**
   * Told why when the server gave no answer (connection refused or reset, host not found, no
   * answer within `timeout`) or answered 5xx to `/prompt` or `/queue`: the pool marks it down.
   */
  readonly down?: ((error: string) => Effect.Effect<void>) | undefined
}

/** The outbound failures that say a server is not there (the others are a refusal of the address or a size). */
const NO_ANSWER: ReadonlySet<OutboundHttp.OutboundFailure> = new Set(["dns", "timeout", "network"])

const fail = (message: string) => new NodeType.NodeFailure({ message })

/** The host of a server URL, for messages. */
export const hostOf = (url: string) => (URL.canParse(url) ? new URL(url).host : url)

const send = (
  server: Server,
  method: "GET" | "POST",
  path: string,
  body?: { readonly json: unknown } | { readonly bytes: Uint8Array; readonly contentType: string },
  maxResponseBytes = MAX_JSON
) =>
  Effect.flatMap(OutboundHttp.OutboundHttp, (http) =>
    http.request({
      method,
      url: `${server.url}${path}`,
      ...(body === undefined
        ? { headers: server.headers }
        : "json" in body
        ? { body: JSON.stringify(body.json), headers: { ...server.headers, "content-type": "application/json" } }
        : { body: body.bytes, headers: { ...server.headers, "content-type": body.contentType } }),
      timeoutMs: Duration.toMillis(server.timeout),
      maxResponseBytes
    })).pipe(
      Effect.mapError((error) => ({
        failure: fail(`the ComfyUI server ${hostOf(server.url)} did not answer: ${error.message}`),
        noAnswer: NO_ANSWER.has(error.reason)
      })),
      Effect.tapError(({ failure, noAnswer }) =>
        noAnswer && server.down !== undefined ? server.down(failure.message) : Effect.void
      ),
      Effect.tap((response) =>
        response.status >= 500 && (path === "/prompt" || path === "/queue") && server.down !== undefined
          ? server.down(`the ComfyUI server ${hostOf(server.url)} answered ${response.status}`)
          : Effect.void
      ),
      Effect.mapError(({ failure }) => failure)
    )

const decodeJson = <A, I>(schema: Schema.Schema<A, I>, body: Uint8Array, what: string) =>
  Effect.try({
    try: () => JSON.parse(new TextDecoder().decode(body)) as unknown,
    catch: () => fail(`${what}: not JSON`)
  })
    .pipe(
      Effect.flatMap((doc) =>
        Either.match(Schema.decodeUnknownEither(schema)(doc), {
          onLeft: () => Effect.fail(fail(`${what}: not the answer ComfyUI gives`)),
          onRight: Effect.succeed
        })
      )
    )

const ok = (server: Server, what: string) => (response: OutboundHttp.OutboundResponse) =>
  response.status >= 200 && response.status < 300
    ? Effect.succeed(response)
    : Effect.fail(fail(`the ComfyUI server ${hostOf(server.url)} answered ${response.status} to ${what}`))

/** The history entry of `promptId`, none while it is not done (ComfyUI answers `{}` then). */
export const history = (server: Server, promptId: string) =>
  send(server, "GET", `/history/${promptId}`).pipe(
    Effect.flatMap(ok(server, "a history request")),
    Effect.flatMap((response) =>
      decodeJson(Schema.Record({ key: Schema.String, value: Schema.Unknown }), response.body, "history")
    ),
    Effect.flatMap((doc) =>
      doc[promptId] === undefined
        ? Effect.succeed(Option.none<HistoryEntry>())
        : Either.match(Schema.decodeUnknownEither(HistoryEntry)(doc[promptId]), {
          onLeft: () => Effect.fail(fail("the history entry is not the one ComfyUI gives")),
          onRight: (entry) => Effect.succeed(Option.some(entry))
        })
    )
  )

/** Whether `promptId` is running or waiting in the server's queue (`/queue`). */
const queued = (server: Server, promptId: string) =>
  send(server, "GET", "/queue").pipe(
    Effect.flatMap(ok(server, "a queue request")),
    Effect.flatMap((response) => decodeJson(Queue, response.body, "queue")),
    Effect.map((queue): Known =>
      queue.queue_running.some((item) => item[1] === promptId)
        ? { _tag: "Running" }
        : queue.queue_pending.some((item) => item[1] === promptId)
        ? { _tag: "Queued" }
        : { _tag: "Unknown" }
    )
  )

/**
 * What `server` knows of `promptId`: `/api/jobs/{id}` on a server that has it (a 404 with a JSON
 * `error` is a job it does not know), else `/history/{id}` then `/queue`, as older servers allow.
 */
export const lookup = (
  server: Server,
  promptId: string
): Effect.Effect<Known, NodeType.NodeFailure, OutboundHttp.OutboundHttp> =>
  Effect.gen(function*() {
    const response = yield* send(server, "GET", `/api/jobs/${promptId}`)
    if (response.status === 200) {
      const job = yield* decodeJson(Job, response.body, "job")
      if (job.status === "pending") return { _tag: "Queued" } as const
      if (job.status === "in_progress") return { _tag: "Running" } as const
    } else if (response.status === 404) {
      const missing = Schema.decodeUnknownOption(Schema.parseJson(Schema.Struct({ error: Schema.String })))(
        new TextDecoder().decode(response.body)
      )
      if (Option.isSome(missing)) return { _tag: "Unknown" } as const
    }
    const done = yield* history(server, promptId)
    if (Option.isSome(done)) return { _tag: "Done", entry: done.value } as const
    return yield* queued(server, promptId)
  })

/** Submits `prompt` as `promptId` for `clientId`'s socket; a refusal names ComfyUI's error and node errors. */
export const submit = (server: Server, prompt: unknown, clientId: string, promptId: string) =>
  Effect.gen(function*() {
    const response = yield* send(server, "POST", "/prompt", {
      json: { prompt, client_id: clientId, prompt_id: promptId }
    })
    if (response.status === 200) {
      const submitted = yield* decodeJson(Submitted, response.body, "the submit's answer")
      if (submitted.prompt_id === promptId) return submitted
      // An older server that makes its own ids: the prompt could never be found again after a
      // crash, so it is taken back and the run fails rather than risk running twice.
      yield* deleteQueued(server, submitted.prompt_id).pipe(
        Effect.zipRight(interrupt(server, submitted.prompt_id)),
        Effect.ignore
      )
      return yield* Effect.fail(
        fail(
          `the ComfyUI server ${hostOf(server.url)} does not keep the prompt_id it is given (it answered another), ` +
            "so a run could not be found again after a crash; update ComfyUI"
        )
      )
    }
    const refused = yield* Effect.either(decodeJson(Refused, response.body, "the refusal"))
    if (Either.isLeft(refused)) return yield* ok(server, "the prompt")(response)
    const error = refused.right.error
    const text = typeof error === "string"
      ? error
      : `${error.message}${error.details === undefined || error.details === "" ? "" : ` (${error.details})`}`
    const nodes = nodeErrorsText(refused.right.node_errors)
    return yield* Effect.fail(fail(`ComfyUI refused the workflow: ${text}${nodes === "" ? "" : `: ${nodes}`}`))
  })

const NodeErrors = Schema.Record({
  key: Schema.String,
  value: Schema.Struct({
    class_type: Schema.optional(Schema.String),
    errors: Schema.optionalWith(
      Schema.Array(Schema.Struct({ message: Schema.optional(Schema.String), details: Schema.optional(Schema.String) })),
      { default: () => [] }
    )
  })
})

/** The node errors of a refusal, one line: `node 10 (LoadImage): …`. */
const nodeErrorsText = (value: unknown): string =>
  Option.match(Schema.decodeUnknownOption(NodeErrors)(value), {
    onNone: () => "",
    onSome: (nodes) =>
      Object.entries(nodes).map(([id, entry]) =>
        `node ${id}${entry.class_type === undefined ? "" : ` (${entry.class_type})`}: ${
          entry.errors.map((e) => `${e.message ?? ""} ${e.details ?? ""}`.trim()).join("; ")
        }`
      ).join("; ").slice(0, 500)
  })

/** Uploads an input file (overwriting one of the same name) and returns the name a workflow gives `LoadImage`. */
export const upload = (server: Server, filename: string, contentType: string, bytes: Uint8Array) =>
  Effect.gen(function*() {
    const boundary = `appexec${crypto.randomUUID().replaceAll("-", "")}`
    const field = (name: string, value: string) =>
      `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
    const head = new TextEncoder().encode(
      `${field("type", "input")}${field("subfolder", "appexec")}${field("overwrite", "true")}--${boundary}\r\n` +
        `content-disposition: form-data; name="image"; filename="${filename}"\r\ncontent-type: ${contentType}\r\n\r\n`
    )
    const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`)
    const body = new Uint8Array(head.length + bytes.length + tail.length)
    body.set(head, 0)
    body.set(bytes, head.length)
    body.set(tail, head.length + bytes.length)
    const response = yield* send(server, "POST", "/upload/image", {
      bytes: body,
      contentType: `multipart/form-data; boundary=${boundary}`
    }).pipe(Effect.flatMap(ok(server, "an upload")))
    const uploaded = yield* decodeJson(Uploaded, response.body, "the upload's answer")
    return uploaded.subfolder === "" ? uploaded.name : `${uploaded.subfolder}/${uploaded.name}`
  })

/** The bytes and content type of an output file (`/view`), within `maxBytes`. */
export const view = (server: Server, file: FileRef, maxBytes: number) =>
  send(
    server,
    "GET",
    `/view?${new URLSearchParams({ filename: file.filename, subfolder: file.subfolder, type: file.type })}`,
    undefined,
    maxBytes
  ).pipe(
    Effect.flatMap(ok(server, "a download of an output")),
    Effect.map((response) => ({ contentType: response.headers["content-type"] ?? "", bytes: response.body }))
  )

/** Takes `promptId` out of the server's queue (`POST /queue {delete}`). */
export const deleteQueued = (server: Server, promptId: string) =>
  send(server, "POST", "/queue", { json: { delete: [promptId] } }).pipe(Effect.flatMap(ok(server, "a queue delete")))

/** Interrupts `promptId` while it runs (`POST /interrupt {prompt_id}`). */
export const interrupt = (server: Server, promptId: string) =>
  send(server, "POST", "/interrupt", { json: { prompt_id: promptId } }).pipe(
    Effect.flatMap(ok(server, "an interrupt"))
  )

/**
 * Whether `server` answers: any answer to `GET /queue` below 500 (an authenticating proxy's 401
 * too: something is there), else the failure that says why not.
 */
export const probe = (server: Server) =>
  send(server, "GET", "/queue").pipe(
    Effect.flatMap((response) =>
      response.status < 500
        ? Effect.void
        : Effect.fail(fail(`the ComfyUI server ${hostOf(server.url)} answered ${response.status}`))
    )
  )
