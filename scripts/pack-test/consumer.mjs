/**
 * An API consumer that has installed `@appexec/client` and nothing else of appexec: it runs the
 * "Greeting" app by name on the service at APPEXEC_BASE_URL with a webhook to a receiver of its
 * own, which verifies the delivery with `@appexec/client/node`. It exits 0 only when the
 * execution completed and its signed webhook verified. Run by `scripts/pack-test.mjs` under
 * plain `node`, from a project where only the client's tarballs are installed.
 */
import { createClient, Outputs } from "@appexec/client"
import { verifyRequest } from "@appexec/client/node"
import { createServer } from "node:http"

const baseUrl = process.env.APPEXEC_BASE_URL
const apiKey = process.env.APPEXEC_API_KEY
if (!baseUrl || !apiKey) throw new Error("APPEXEC_BASE_URL and APPEXEC_API_KEY must be set.")

const appexec = createClient({ baseUrl, apiKey })

let delivered
const delivery = new Promise((resolve, reject) => {
  delivered = resolve
  setTimeout(() => reject(new Error("No verified webhook arrived within 20 s.")), 20_000).unref()
})
const receiver = createServer(async (req, res) => {
  try {
    const verified = await verifyRequest(appexec, req)
    res.writeHead(204).end()
    delivered(verified)
  } catch (error) {
    res.writeHead(401).end()
    console.error(`refused a webhook: ${error}`)
  }
})
await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve))
const address = receiver.address()
const webhook = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/appexec-webhook`

const done = await appexec.run("Greeting", { who: "Ada" }, { webhook, interval: 100 })
for (const output of Outputs.all(done)) console.log(Outputs.describe(output))
if (done.status !== "completed") {
  throw new Error(`The execution ${done.executionId} ended ${done.status}: ${done.errorMessage}`)
}

const verified = await delivery
receiver.close()
if (verified.requestId !== done.executionId || verified.execution.status !== "completed") {
  throw new Error(
    `The webhook is for ${verified.requestId} (${verified.execution.status}), not for ${done.executionId}.`
  )
}
console.log(`webhook verified: execution ${verified.requestId} ${verified.execution.status}, key ${verified.kid}`)
