/**
 * A Node receiver of appexec completion webhooks: it reads the raw body, verifies the Ed25519
 * signature and timestamp with `verifyWebhook` against the published key set (cached, fetched
 * again when a webhook names a key it does not hold), answers 401 to anything unverified, and
 * acts once per execution however many times the webhook arrives.
 *
 * Run it with `APPEXEC_URL=http://127.0.0.1:8080 APPEXEC_API_KEY=aex_… npx tsx examples/webhook-receiver/receiver.ts`,
 * then start executions with `?webhook=http://127.0.0.1:3000/appexec-webhook` (the server needs
 * `--allow-private-networks` to call a local address).
 */
import { WebhookVerifier } from "@appexec/core"
import { Either } from "effect"
import { createServer, type IncomingMessage, type Server } from "node:http"

/** What the receiver needs. */
export interface ReceiverOptions {
  /** Fetches the key set (`GET /v1/webhooks/signing-key`). */
  readonly fetchKeySet: () => Promise<WebhookVerifier.KeySetLike>
  /** Called once per execution with the verified payload. */
  readonly onCompletion: (execution: { readonly executionId: string; readonly status: string }, payload: unknown) => void | Promise<void>
  /** Largest body accepted (default 1 MiB). */
  readonly maxBodyBytes?: number
}

const readBody = (req: IncomingMessage, limit: number): Promise<Buffer | undefined> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) resolve(undefined)
      else chunks.push(chunk)
    })
    req.on("end", () => resolve(Buffer.concat(chunks)))
    req.on("error", reject)
  })

/** An HTTP server that receives appexec webhooks on any path. */
export const createReceiver = (options: ReceiverOptions): Server => {
  let keySet: Promise<WebhookVerifier.KeySetLike> | undefined
  const seen = new Set<string>()

  return createServer(async (req, res) => {
    if (req.method !== "POST") return res.writeHead(405).end()
    const rawBody = await readBody(req, options.maxBodyBytes ?? 1024 * 1024)
    if (rawBody === undefined) return res.writeHead(413).end()

    keySet ??= options.fetchKeySet()
    let result = WebhookVerifier.verifyWebhook(rawBody, req.headers, await keySet, { toleranceSeconds: 300 })
    if (Either.isLeft(result) && result.left.reason === "no_matching_key") {
      // The key was rotated since we cached the set: fetch it again once.
      keySet = options.fetchKeySet()
      result = WebhookVerifier.verifyWebhook(rawBody, req.headers, await keySet, { toleranceSeconds: 300 })
    }
    if (Either.isLeft(result)) {
      return res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: result.left.reason }))
    }

    // Only now is the body trusted. The request id is the execution id, the same on every retry.
    const payload = JSON.parse(rawBody.toString("utf8")) as { data: { executionId: string; status: string } }
    const executionId = payload.data.executionId
    if (!seen.has(executionId)) {
      seen.add(executionId)
      await options.onCompletion(payload.data, payload)
    }
    res.writeHead(204).end()
  })
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const base = process.env["APPEXEC_URL"] ?? "http://127.0.0.1:8080"
  const apiKey = process.env["APPEXEC_API_KEY"] ?? ""
  const port = Number(process.env["PORT"] ?? 3000)
  const server = createReceiver({
    fetchKeySet: async () => {
      const response = await fetch(`${base}/v1/webhooks/signing-key`, { headers: { "x-api-key": apiKey } })
      if (!response.ok) throw new Error(`key set: HTTP ${response.status}`)
      return (await response.json()) as WebhookVerifier.KeySetLike
    },
    onCompletion: (execution) => console.log(`execution ${execution.executionId} ${execution.status}`)
  })
  server.listen(port, "127.0.0.1", () => console.log(`receiving appexec webhooks on http://127.0.0.1:${port}/`))
}
