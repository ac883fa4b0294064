/**
 * A real webhook delivery of the compiled `appexec serve`, for the documentation's verifiers:
 * `serve` on a temp data directory (the example apps imported at its first start), a receiver on
 * 127.0.0.1 that keeps the first request's raw body and headers, and a run of Greeting whose
 * webhook (with its `start` and `completed` events) reaches it. Everything closes with the scope.
 */
import { Effect, Queue } from "effect"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { startServe, tempDataDir } from "./ServeProcess.js"

/** One request the receiver got: its raw body and headers. */
export interface Delivery {
  readonly rawBody: Buffer
  readonly headers: IncomingHttpHeaders
}

/** A header's value, as one string. */
export const headerOf = (delivery: Delivery, name: string): string => String(delivery.headers[name] ?? "")

/** The served instance and the first delivery of a run of Greeting, a `start` event, and its completion. */
export const realDelivery = Effect.gen(function*() {
  const serve = yield* startServe(yield* tempDataDir, ["--allow-private-networks"])
  const received = yield* Queue.unbounded<Delivery>()
  const receiver = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      res.writeHead(204).end()
      Queue.unsafeOffer(received, { rawBody: Buffer.concat(chunks), headers: req.headers })
    })
  })
  const port = yield* Effect.acquireRelease(
    Effect.async<number>((resume) => {
      receiver.listen(0, "127.0.0.1", () => resume(Effect.succeed((receiver.address() as AddressInfo).port)))
    }),
    () => Effect.sync(() => receiver.close())
  )
  const headers = { "x-api-key": serve.key, "content-type": "application/json" }
  yield* Effect.promise(async () => {
    const apps = await fetch(`${serve.baseUrl}/v1/apps`, { headers }).then((r) => r.json() as Promise<any>)
    const greeting: string = apps.data.find((a: { name: string }) => a.name === "Greeting").appId
    const hook = encodeURIComponent(`http://127.0.0.1:${port}/hook`)
    const started = await fetch(`${serve.baseUrl}/v1/apps/${greeting}/executions?webhook=${hook}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ inputs: { who: "Ada" }, webhookEvents: ["start", "completed"] })
    })
    if (started.status !== 202) throw new Error(`start answered ${started.status}: ${await started.text()}`)
  })
  const take = Queue.take(received).pipe(
    Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("no webhook arrived") })
  )
  return { baseUrl: serve.baseUrl, key: serve.key, deliveries: [yield* take, yield* take] as const }
})
