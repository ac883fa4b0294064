/**
 * A Node receiver of appexec completion webhooks, built on `@appexec/client`: the client reads
 * the raw body, verifies the Ed25519 signature and the timestamp (300 s tolerance) against the
 * published key set (cached, fetched again once when a webhook names a key it does not hold),
 * and decodes the execution. Anything unverified gets 401. The receiver acts once per
 * execution, however many times the webhook arrives: the request id is the execution id.
 *
 * Run it with `APPEXEC_URL=http://127.0.0.1:8080 APPEXEC_API_KEY=aex_… npx tsx examples/webhook-receiver/receiver.ts`,
 * then start executions with `?webhook=http://127.0.0.1:3000/appexec-webhook` (the server needs
 * `--allow-private-networks` to call a local address).
 */
import { createClient, type PromiseClient } from "@appexec/client"
import * as NodeWebhook from "@appexec/client/node"
import type { Execution } from "@appexec/api"
import { createServer, type Server } from "node:http"

/** What the receiver needs. */
export interface ReceiverOptions {
  /** The client whose key set verifies the webhooks. */
  readonly client: PromiseClient.Client
  /** Called once per execution with the verified execution. */
  readonly onCompletion: (execution: Execution.Execution) => void | Promise<void>
}

/** The reason a webhook was refused, for the 401 body. */
const reasonOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "reason" in error && typeof error.reason === "string"
    ? error.reason
    : "invalid_webhook"

/** An HTTP server that receives appexec webhooks on any path. */
export const createReceiver = (options: ReceiverOptions): Server => {
  const seen = new Set<string>()
  return createServer(async (req, res) => {
    if (req.method !== "POST") return res.writeHead(405).end()
    const delivery = await NodeWebhook.verifyRequest(options.client, req).then(
      (verified) => ({ verified }),
      (error: unknown) => ({ error })
    )
    if ("error" in delivery) {
      return res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: reasonOf(delivery.error) }))
    }
    // Only now is the body trusted.
    const execution = delivery.verified.execution
    if (!seen.has(execution.executionId)) {
      seen.add(execution.executionId)
      await options.onCompletion(execution)
    }
    res.writeHead(204).end()
  })
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const client = createClient({
    baseUrl: process.env["APPEXEC_URL"] ?? "http://127.0.0.1:8080",
    apiKey: process.env["APPEXEC_API_KEY"] ?? ""
  })
  const port = Number(process.env["PORT"] ?? 3000)
  const server = createReceiver({
    client,
    onCompletion: (execution) => console.log(`execution ${execution.executionId} ${execution.status}`)
  })
  server.listen(port, "127.0.0.1", () => console.log(`receiving appexec webhooks on http://127.0.0.1:${port}/`))
}
