/**
 * A local server that speaks the OpenAI routes `provider.openai` calls, for tests: an HTTP server
 * on 127.0.0.1 (port 0) answering `POST /v1/chat/completions` and `POST /v1/images/generations`
 * in the shapes of OpenAI's API reference (https://platform.openai.com/docs/api-reference/chat/create,
 * https://platform.openai.com/docs/api-reference/images/create), with its error body
 * (`{ "error": { message, type, param, code } }`). Its model echoes: a chat answers
 * `You said: <the last user message>`; an image generation answers the PNG the test gave, as
 * `b64_json` or, when asked with `response_format: "url"`, as a URL of this server
 * (`GET /files/<n>.png`).
 *
 * With a `token`, a request without `Authorization: Bearer <token>` is answered 401, and that
 * answer echoes the credential it got, as a careless provider might: a test then checks that
 * appexec repeats it nowhere. A test scripts the answers to the next requests of a route
 * (`script`): a status with headers and body (429 with `Retry-After`, 500, 503), `"hold"` to
 * keep the request open until `release` (a slow model, a timeout under `TestClock`), or
 * `"reset"` to break the connection. Closed with the scope, open connections included.
 */
import { Effect, Queue, type Scope } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import * as LocalServer from "./internal/LocalServer.js"

/** One request as the server got it. */
export interface Received {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** The body parsed as JSON (`undefined` when it was none or not JSON). */
  readonly json: unknown
  /** What the server did: a status, `"hold"` or `"reset"`. */
  readonly answer: number | "hold" | "reset"
}

/** A scripted answer: a status with optional headers and body, `"hold"`, or `"reset"`. */
export type Scripted =
  | { readonly status: number; readonly headers?: Readonly<Record<string, string>>; readonly body?: unknown }
  | "hold"
  | "reset"

/** The routes that can be scripted. */
export type Route = "chat" | "images"

/** A running server. */
export interface TestOpenAiServer {
  /** The API root with its version, as OpenAI's SDKs take it: `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string
  readonly port: number
  /** Every request so far, in arrival order. */
  readonly received: ReadonlyArray<Received>
  /** The next API request not yet taken (file downloads are only recorded); fails after 5 s rather than hang the test. */
  readonly next: Effect.Effect<Received, Error>
  /** Queues answers for the next requests of `route`, before the normal ones. */
  readonly script: (route: Route, ...answers: ReadonlyArray<Scripted>) => void
  /** Answers every held request as if it had not been held. */
  readonly release: Effect.Effect<void>
  /** How many requests are held now. */
  readonly held: () => number
}

/** What the server needs: the token it demands (none: no check) and the image it generates. */
export interface Options {
  readonly token?: string
  /** The PNG bytes an image generation answers with. */
  readonly image: Uint8Array
}

const ROUTES: Readonly<Record<string, Route>> = {
  "/v1/chat/completions": "chat",
  "/v1/images/generations": "images"
}

const error = (status: number, message: string, type: string, code: string | null, param: string | null = null) => ({
  status,
  body: { error: { message, type, param, code } }
})

/** Starts a server with `options`. */
export const start = (options: Options): Effect.Effect<TestOpenAiServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const received: Array<Received> = []
    const pending = yield* Queue.unbounded<Received>()
    const scripts: Record<Route, Array<Scripted>> = { chat: [], images: [] }
    const { holds, respond } = LocalServer.makeResponder()
    const files: Array<Uint8Array> = []
    let port = 0
    let created = 1_700_000_000

    /** The answer OpenAI would give to `json` on `route`. */
    const normal = (route: Route, headers: IncomingHttpHeaders, json: unknown) => {
      if (options.token !== undefined && headers["authorization"] !== `Bearer ${options.token}`) {
        const sent = String(headers["authorization"] ?? "").replace(/^Bearer /, "")
        return error(401, `Incorrect API key provided: ${sent}.`, "invalid_request_error", "invalid_api_key")
      }
      if (json === null || typeof json !== "object") {
        return error(400, "We could not parse the JSON body of your request.", "invalid_request_error", null)
      }
      const body = json as Record<string, unknown>
      if (typeof body["model"] !== "string" || body["model"] === "") {
        return error(400, "you must provide a model parameter", "invalid_request_error", null, "model")
      }
      created += 1
      if (route === "chat") {
        const messages = body["messages"]
        if (!Array.isArray(messages) || messages.length === 0) {
          return error(400, "'messages' must be a non-empty array", "invalid_request_error", null, "messages")
        }
        const users = messages.filter((m): m is { role: string; content: string } =>
          typeof m === "object" && m !== null && (m as { role?: unknown }).role === "user"
        )
        const content = `You said: ${users.at(-1)?.content ?? ""}`
        return {
          status: 200,
          body: {
            id: `chatcmpl-${created}`,
            object: "chat.completion",
            created,
            model: body["model"],
            choices: [{
              index: 0,
              message: { role: "assistant", content, refusal: null },
              logprobs: null,
              finish_reason: "stop"
            }],
            usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 }
          }
        }
      }
      if (typeof body["prompt"] !== "string" || body["prompt"] === "") {
        return error(400, "'prompt' is a required property", "invalid_request_error", null, "prompt")
      }
      const item = body["response_format"] === "url"
        ? { url: `http://127.0.0.1:${port}/files/${files.push(options.image) - 1}.png` }
        : { b64_json: Buffer.from(options.image).toString("base64") }
      return { status: 200, body: { created, data: [{ ...item, revised_prompt: body["prompt"] }] } }
    }

    port = yield* LocalServer.listen((req, res, body) => {
      const path = req.url ?? "/"
      const file = /^\/files\/(\d+)\.png$/.exec(path)
      if (req.method === "GET" && file !== null && files[Number(file[1])] !== undefined) {
        const bytes = files[Number(file[1])]!
        received.push({ method: "GET", path, headers: req.headers, json: undefined, answer: 200 })
        res.writeHead(200, { "content-type": "image/png", "content-length": String(bytes.length) })
        res.end(bytes)
        return
      }
      const route = ROUTES[path]
      const json = LocalServer.parseJson(body)
      const scripted = route === undefined ? undefined : scripts[route].shift()
      const answer = scripted === undefined
        ? route === undefined || req.method !== "POST"
          ? error(404, `Invalid URL (${req.method} ${path})`, "invalid_request_error", null)
          : normal(route, req.headers, json)
        : scripted
      const request: Received = {
        method: req.method ?? "",
        path,
        headers: req.headers,
        json,
        answer: typeof answer === "string" ? answer : answer.status
      }
      received.push(request)
      Queue.unsafeOffer(pending, request)
      respond(req, res, answer, () => normal(route!, req.headers, json))
    })
    return {
      baseUrl: `http://127.0.0.1:${port}/v1`,
      port,
      received,
      next: LocalServer.takeWithin(pending, { message: "no request arrived within 5 s", live: false }),
      script: (route, ...answers) => {
        scripts[route].push(...answers)
      },
      release: holds.release,
      held: holds.count
    }
  })
