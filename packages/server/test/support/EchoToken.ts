/**
 * An app whose run reads an operator's secret, for tests of secrets across restarts and master
 * keys: its `http.request` node calls a local endpoint that answers `{ "who": … }` only to the
 * bearer of `TOKEN` (set as the secret `ECHO_TOKEN`); and the calls a consumer makes to start an
 * execution and wait for its end, through the HTTP API.
 */
import { Effect } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"

/** The value of the secret `ECHO_TOKEN` the endpoint expects. */
export const TOKEN = "echo-token-0123456789abcdef"

/** The endpoint, on a free port of 127.0.0.1; closed with the scope. */
export const echoServer = Effect.acquireRelease(
  Effect.async<Server>((resume) => {
    const server = createServer((req, res) => {
      const who = new URL(req.url ?? "/", "http://localhost").searchParams.get("who")
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401).end()
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ who }))
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
)

/** The app's definition, calling the endpoint of `server`: input `who`, output `Answer` (the echo). */
export const appDefinition = (server: Server) => ({
  name: "Echo token",
  public: true,
  nodes: [
    { id: "who", type: "input.text", label: "Who", config: { name: "who", required: true } },
    {
      id: "call",
      type: "http.request",
      label: "Call",
      config: {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/echo?who={{who}}`,
        headers: { Authorization: { secret: "ECHO_TOKEN", prefix: "Bearer " } },
        pick: "/who"
      }
    },
    { id: "answer", type: "output.text", label: "Answer" }
  ],
  edges: [{ source: "who", target: "call" }, { source: "call", target: "answer" }]
})

/** An execution as the poll answers it (the fields the tests read). */
export interface Polled {
  readonly executionId: string
  readonly status: string
  readonly errorMessage: string | null
  readonly outputs: ReadonlyArray<{ readonly id: string; readonly value: unknown }>
}

/** Starts an execution of `appId` through the API at `baseUrl`, with a webhook to `webhookUrl`; its id (fails unless 202). */
export const start = (
  baseUrl: string,
  apiKey: string,
  appId: string,
  inputs: Record<string, string>,
  webhookUrl?: string
) =>
  Effect.tryPromise(async () => {
    const query = webhookUrl === undefined ? "" : `?webhook=${encodeURIComponent(webhookUrl)}`
    const answer = await fetch(`${baseUrl}/v1/apps/${appId}/executions${query}`, {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: JSON.stringify({ inputs })
    })
    if (answer.status !== 202) throw new Error(`start answered ${answer.status}: ${await answer.text()}`)
    return ((await answer.json()) as { data: { executionId: string } }).data.executionId
  })

/** The execution `id` once it has ended (a long poll of up to 30 s). */
export const finished = (baseUrl: string, apiKey: string, id: string) =>
  Effect.promise(async () => {
    const answer = await fetch(`${baseUrl}/v1/executions/${id}`, {
      headers: { "x-api-key": apiKey, prefer: "wait=30" }
    })
    return ((await answer.json()) as { data: Polled }).data
  })

/** The published webhook signing keys. */
export const signingKeys = (baseUrl: string, apiKey: string) =>
  Effect.promise(async () =>
    ((await (await fetch(`${baseUrl}/v1/webhooks/signing-key`, { headers: { "x-api-key": apiKey } })).json()) as {
      keys: Array<{ kid: string; kty: string; crv: string; x: string }>
    }).keys
  )
