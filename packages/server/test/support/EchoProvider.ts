/**
 * A hostile provider on 127.0.0.1: it echoes the credential it gets (the `Authorization` header,
 * the token after its scheme, the token's base64 and URL encoding, the whole header's base64)
 * back, in the way a request asks for with `mode=<m>` in its body (or `/poll/<m>/…` in its path):
 * `4xx` a 401 JSON error, `5xx` a 500 JSON error, `json` a 2xx JSON answer that each protocol
 * reads (`http.request`, `http.job`, OpenAI's chat completions, a Replicate prediction, a fal
 * queue request with status and response URLs) with the echo in it, `text` a 2xx text answer, and
 * `header` a 2xx JSON answer with the echo in its response headers only. Every request is kept
 * with the credential it carried.
 */
import { TestHttpServer } from "@appexec/testing"
import { Effect } from "effect"
import type { ServerResponse } from "node:http"

/** The ways of echoing. */
export const MODES = ["4xx", "5xx", "json", "text", "header"] as const
export type Mode = typeof MODES[number]

/** A request as the provider got it. */
export interface Received {
  readonly method: string
  readonly path: string
  readonly authorization: string | undefined
}

/** The echo of a credential, in its usual encodings. */
export const echoOf = (authorization: string): string => {
  const token = authorization.replace(/^(Bearer|Key|Basic) /, "")
  return [
    `auth: ${authorization}`,
    `token: ${token}`,
    `b64: ${Buffer.from(token).toString("base64")}`,
    `b64url: ${Buffer.from(token).toString("base64url")}`,
    `b64auth: ${Buffer.from(authorization).toString("base64")}`,
    `url: ${encodeURIComponent(token)}`
  ].join("; ")
}

const modeOf = (path: string, body: string): Mode | undefined => {
  const polled = /^\/poll\/([^/]+)\//.exec(path)?.[1]
  const asked = polled ?? /mode=([0-9a-z]+)/.exec(body)?.[1]
  return MODES.find((m) => m === asked)
}

const send = (res: ServerResponse, status: number, type: string, body: string, headers: Record<string, string>) => {
  const bytes = Buffer.from(body)
  res.writeHead(status, { "content-type": type, "content-length": String(bytes.length), ...headers })
  res.end(bytes)
}

/** Starts the provider, closed with the scope: its origin and the requests it got. */
export const start = Effect.gen(function*() {
  const { origin, server } = yield* TestHttpServer.listening
  const received: Array<Received> = []
  server.on("request", (req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const path = req.url ?? "/"
      const authorization = req.headers.authorization
      received.push({ method: req.method ?? "", path, authorization })
      const mode = modeOf(path, Buffer.concat(chunks).toString("utf8"))
      const echo = echoOf(authorization ?? "")
      const echoHeaders = { "x-echo": echo, "x-echo-token": authorization ?? "" }
      if (mode === undefined) return send(res, 400, "text/plain", "no mode", {})
      if (mode === "4xx" || mode === "5xx") {
        return send(
          res,
          mode === "4xx" ? 401 : 500,
          "application/json",
          JSON.stringify({
            error: { message: `Incorrect API key provided: ${echo}`, type: "invalid_request_error", code: "bad_key" },
            detail: `bad token: ${echo}`
          }),
          echoHeaders
        )
      }
      if (mode === "text") return send(res, 200, "text/plain", `your request carried ${echo}`, echoHeaders)
      const said = mode === "json" ? echo : "ok"
      const polled = path.startsWith("/poll/")
      const at = `${origin}/poll/${mode}`
      send(
        res,
        polled ? 200 : 201,
        "application/json",
        JSON.stringify({
          id: "job-1",
          request_id: "req-1",
          // Done at once for Replicate and http.job; fal polls its status URL, which says COMPLETED.
          status: polled ? "COMPLETED" : "succeeded",
          urls: { get: `${at}/status`, cancel: `${at}/cancel` },
          status_url: `${at}/status`,
          response_url: `${at}/result`,
          cancel_url: `${at}/cancel`,
          output: said,
          echo: said,
          choices: [{ index: 0, message: { role: "assistant", content: said }, finish_reason: "stop" }]
        }),
        mode === "header" ? echoHeaders : {}
      )
    })
  })
  return { origin, received }
})
