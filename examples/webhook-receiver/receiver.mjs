// @ts-check
/**
 * A Node receiver of appexec completion webhooks, built on `@appexec/client`: `verifyRequest`
 * from `@appexec/client/node` reads the raw body, verifies the Ed25519 signature and the
 * timestamp (300 s tolerance) against the published key set (cached, fetched again once when a
 * webhook names a key it does not hold), and decodes the execution. Anything unverified gets 401.
 * The receiver acts once per execution, however many times the webhook arrives: the request id
 * is the execution id. It runs under plain `node`; the JSDoc types let TypeScript check it.
 *
 * Run it with `APPEXEC_BASE_URL=http://127.0.0.1:8080 APPEXEC_API_KEY=aex_… node examples/webhook-receiver/receiver.mjs`,
 * then start executions with `?webhook=http://127.0.0.1:3000/appexec-webhook` (the server needs
 * `--allow-private-networks` to call a local address).
 *
 * In a fetch-style server (Hono, Next.js route handlers, Deno, workers) it is one call on the
 * web `Request`:
 *
 *     export const POST = async (request) => {
 *       const delivery = await appexec.verifyWebhookRequest(request).catch(() => undefined)
 *       if (delivery === undefined) return new Response(null, { status: 401 })
 *       await handle(delivery.execution)
 *       return new Response(null, { status: 204 })
 *     }
 */
import { createClient, Outputs } from "@appexec/client"
import { verifyRequest } from "@appexec/client/node"
import { createServer } from "node:http"
import { pathToFileURL } from "node:url"

/** @typedef {import("@appexec/client").PromiseClient.Client} Client */
/** @typedef {import("@appexec/client").WebhookKeys.VerifiedDelivery["execution"]} Execution */

/**
 * What the receiver needs.
 * @typedef {object} ReceiverOptions
 * @property {Client} client The client whose key set verifies the webhooks.
 * @property {(execution: Execution) => void | Promise<void>} onCompletion Called once per execution with the verified execution.
 * @property {(refusal: { code: string, message: string }) => void} [onRefusal] Called for each refused webhook, with why.
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
 * What the receiver prints of a verified webhook: the execution's id and status (with its error
 * when it failed), then one line per output (`Greeting (text): Hello Ada, in a warm tone.`).
 * @param {Execution} execution
 * @returns {string}
 */
export const describeWebhook = (execution) =>
  [
    `verified webhook: execution ${execution.executionId} ${execution.status}${
      execution.status === "failed" && execution.errorMessage !== null ? `: ${execution.errorMessage}` : ""
    }`,
    ...Outputs.all(execution).map((view) => `  ${Outputs.describe(view)}`)
  ].join("\n")

/**
 * An HTTP server that receives appexec webhooks on any path.
 * @param {ReceiverOptions} options
 * @returns {import("node:http").Server}
 */
export const createReceiver = (options) => {
  /** @type {Set<string>} */
  const seen = new Set()
  return createServer(async (req, res) => {
    if (req.method !== "POST") return res.writeHead(405).end()
    const delivery = await verifyRequest(options.client, req).then(
      (verified) => ({ verified }),
      (/** @type {unknown} */ error) => ({ error })
    )
    if ("error" in delivery) {
      const refusal = refusalOf(delivery.error)
      options.onRefusal?.(refusal)
      return res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: refusal.code }))
    }
    // Only now is the body trusted.
    const execution = delivery.verified.execution
    if (!seen.has(execution.executionId)) {
      seen.add(execution.executionId)
      await options.onCompletion(execution)
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
    onCompletion: (execution) => console.log(describeWebhook(execution)),
    onRefusal: (refusal) => console.error(`refused a webhook (401 ${refusal.code}): ${refusal.message}`)
  })
  server.listen(port, "127.0.0.1", () => {
    const address = server.address()
    const listening = typeof address === "object" && address !== null ? address.port : port
    console.log(`receiving appexec webhooks on http://127.0.0.1:${listening}/`)
  })
}
