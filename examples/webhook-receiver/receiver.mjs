// @ts-check
/**
 * A Node receiver of appexec webhooks, built on `@appexec/client`: it reads the raw body and
 * verifies both signatures appexec sends on every webhook — the service's own
 * (`X-Service-Webhook-Signature`, Ed25519 over `timestamp.body`) and Standard Webhooks'
 * (`webhook-signature: v1a,…` over `id.timestamp.body`) — with their timestamps (300 s tolerance),
 * against the published key set (cached, fetched again once when a webhook names a key it does
 * not hold), and decodes the event. Anything unverified gets 401. It prints each event it gets
 * (`start`, `output`, `logs`, `completed`: a start names them with `webhookEvents`), once per
 * message however many times it arrives (`webhook-id`). It runs under plain `node`; the JSDoc
 * types let TypeScript check it.
 *
 * Run it with `APPEXEC_BASE_URL=http://127.0.0.1:8080 APPEXEC_API_KEY=aex_… node examples/webhook-receiver/receiver.mjs`,
 * then start executions with `?webhook=http://127.0.0.1:3000/appexec-webhook` (the server needs
 * `--allow-private-networks` to call a local address), and `&webhookEvents=start,output,logs,completed`
 * for every event.
 *
 * In a fetch-style server (Hono, Next.js route handlers, Deno, workers) it is one call on the
 * web `Request`:
 *
 *     export const POST = async (request) => {
 *       const delivery = await appexec.verifyWebhookRequest(request).catch(() => undefined)
 *       if (delivery === undefined) return new Response(null, { status: 401 })
 *       await handle(delivery.event, delivery.execution)
 *       return new Response(null, { status: 204 })
 *     }
 */
import { createClient, Outputs } from "@appexec/client"
import { createServer } from "node:http"
import { pathToFileURL } from "node:url"

/** @typedef {import("@appexec/client").PromiseClient.Client} Client */
/** @typedef {import("@appexec/client").WebhookKeys.VerifiedDelivery} Delivery */

/**
 * What the receiver needs.
 * @typedef {object} ReceiverOptions
 * @property {Client} client The client whose key set verifies the webhooks.
 * @property {(delivery: Delivery) => void | Promise<void>} onEvent Called once per event (message) with the verified delivery: its `event`, its `execution`, a `logs` event's `logs`.
 * @property {(refusal: { code: string, message: string, scheme: "service" | "standard" }) => void} [onRefusal] Called for each refused webhook, with why and which signature refused it.
 */

/**
 * Why a webhook was refused: a short code for the 401 body and a sentence for the receiver's log.
 * A verification error carries its reason (`bad_signature`, `stale_timestamp`, …); any other
 * failure is the key set that could not be fetched (a missing or wrong API key, a server that
 * cannot be reached).
 * @param {unknown} error
 * @returns {{ code: string, message: string }}
 */
export const refusalOf = (error) => {
  const field = (/** @type {string} */ name) =>
    typeof error === "object" && error !== null && name in error
      ? /** @type {Record<string, unknown>} */ (error)[name]
      : undefined
  const reason = field("reason")
  const message = field("message")
  const said = typeof message === "string" && message !== "" ? message : String(error)
  return field("_tag") === "WebhookVerificationError" && typeof reason === "string"
    ? { code: reason, message: said }
    : {
      code: "key_set_unavailable",
      message: `the signing key set could not be fetched: ${
        typeof field("status") === "number" ? `the server answered ${field("status")} ${field("code")}: ${said}` : said
      }${field("status") === 401 ? " Is APPEXEC_API_KEY a key of that server?" : ""}`
    }
}

/**
 * What the receiver prints of a verified webhook: its event, the execution's id and status (with
 * its error when it failed), then one line per output (`Greeting (text): Hello Ada, in a warm
 * tone.`) on a `completed` or `output` event, one per log line (`[call] GET example.com`) on a
 * `logs` event.
 * @param {Delivery} delivery
 * @returns {string}
 */
export const describeWebhook = (delivery) => {
  const { event, execution } = delivery
  return [
    `verified ${event} webhook: execution ${execution.executionId} ${execution.status}${
      execution.status === "failed" && execution.errorMessage !== null ? `: ${execution.errorMessage}` : ""
    }`,
    ...(event === "completed" || event === "output"
      ? Outputs.all(execution).map((view) => `  ${Outputs.describe(view)}`)
      : []),
    ...(delivery.logs ?? []).map((line) => `  [${line.nodeId ?? "appexec"}] ${line.message}`)
  ].join("\n")
}

/** The largest body read: 1 MiB, as the client's own readers. */
const MAX_BODY_BYTES = 1024 * 1024

/**
 * The raw body of a request (the bytes as sent: both signatures cover them), or undefined when it
 * is larger than `MAX_BODY_BYTES`.
 * @param {import("node:http").IncomingMessage} req
 * @returns {Promise<Uint8Array | undefined>}
 */
const rawBodyOf = async (req) => {
  /** @type {Array<Buffer>} */
  const chunks = []
  let size = 0
  for await (const chunk of req) {
    size += chunk.length
    if (size > MAX_BODY_BYTES) return undefined
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

/**
 * An HTTP server that receives appexec webhooks on any path. Each request is verified twice, by
 * both signatures appexec sends: the service's own headers (`X-Service-Webhook-Signature`) and
 * Standard Webhooks' (`webhook-signature: v1a,…`); it is acted on only when both verify, once per
 * message (`webhook-id`, the same on every attempt of one event).
 * @param {ReceiverOptions} options
 * @returns {import("node:http").Server}
 */
export const createReceiver = (options) => {
  /** @type {Set<string>} */
  const seen = new Set()
  return createServer(async (req, res) => {
    if (req.method !== "POST") return res.writeHead(405).end()
    const rawBody = await rawBodyOf(req)
    if (rawBody === undefined) return res.writeHead(413).end()
    const [service, standard] = await Promise.allSettled([
      options.client.webhooks.verify(rawBody, req.headers),
      options.client.webhooks.verify(rawBody, req.headers, { scheme: "standard" })
    ])
    /** @param {unknown} error @param {"service" | "standard"} scheme */
    const refuse = (error, scheme) => {
      const refusal = refusalOf(error)
      options.onRefusal?.({ ...refusal, scheme })
      return res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: refusal.code }))
    }
    if (service.status === "rejected") return refuse(service.reason, "service")
    if (standard.status === "rejected") return refuse(standard.reason, "standard")
    // Only now is the body trusted.
    const delivery = standard.value
    if (!seen.has(delivery.webhookId ?? "")) {
      seen.add(delivery.webhookId ?? "")
      await options.onEvent(delivery)
    }
    return res.writeHead(204).end()
  })
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const apiKey = process.env["APPEXEC_API_KEY"]
  if (apiKey === undefined || apiKey === "") {
    console.error(
      "receiver: APPEXEC_API_KEY is not set. The receiver fetches the webhook signing keys with an API key of the " +
        "server: run it as APPEXEC_API_KEY=aex_… node examples/webhook-receiver/receiver.mjs (the key `appexec serve` printed)."
    )
    process.exit(1)
  }
  const client = createClient({ baseUrl: process.env["APPEXEC_BASE_URL"] ?? "http://127.0.0.1:8080", apiKey })
  const port = Number(process.env["PORT"] ?? 3000)
  const server = createReceiver({
    client,
    onEvent: (delivery) => console.log(describeWebhook(delivery)),
    onRefusal: (refusal) =>
      console.error(`refused a webhook (401 ${refusal.code}, ${refusal.scheme} signature): ${refusal.message}`)
  })
  server.listen(port, "127.0.0.1", () => {
    const address = server.address()
    const listening = typeof address === "object" && address !== null ? address.port : port
    console.log(`receiving appexec webhooks on http://127.0.0.1:${listening}/`)
  })
}
