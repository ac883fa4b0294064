/**
 * A webhook receiver written from the Standard Webhooks specification alone
 * (github.com/standard-webhooks/standard-webhooks, spec/standard-webhooks.md, version 1.0.0), with
 * `node:crypto` and `node:http` only: nothing of appexec is imported. What it implements, section
 * by section:
 *
 * - "Webhook headers": `webhook-id`, `webhook-timestamp` (integer Unix seconds) and
 *   `webhook-signature`, a space-delimited list of `version,base64` signatures;
 * - "Signature scheme": the signed content is `msg_id.timestamp.payload`, the raw body as sent;
 *   `v1a` is the asymmetric scheme, Ed25519; public keys are `whpk_` + base64;
 * - "Verifying signatures": the timestamp within a tolerance of the receiver's clock (5 minutes),
 *   any listed `v1a` signature valid under a trusted key, other versions ignored; `webhook-id`
 *   as the idempotency key.
 *
 * Every request is kept with whether it verified. `answer` chooses the status of each request
 * (204 by default), given its message id and whether that message was seen before.
 */
import { Effect, Queue, type Scope } from "effect"
import { createPublicKey, type KeyObject, verify } from "node:crypto"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"

/** The DER prefix of an Ed25519 public key in SubjectPublicKeyInfo form (RFC 8410): 32 raw bytes follow. */
const SPKI_ED25519 = Buffer.from("302a300506032b6570032100", "hex")

/** The Ed25519 key of a `whpk_…` text. */
export const publicKeyOf = (whpk: string): KeyObject => {
  if (!whpk.startsWith("whpk_")) throw new Error(`not a whpk_ key: ${whpk}`)
  const raw = Buffer.from(whpk.slice("whpk_".length), "base64")
  if (raw.length !== 32) throw new Error("a whpk_ key holds 32 bytes")
  return createPublicKey({ key: Buffer.concat([SPKI_ED25519, raw]), format: "der", type: "spki" })
}

/** Whether a request verifies under `keys`, as the specification says, at `nowSeconds`. */
export const verifies = (
  headers: IncomingHttpHeaders,
  rawBody: Buffer,
  keys: ReadonlyArray<KeyObject>,
  nowSeconds = Math.floor(Date.now() / 1000)
): boolean => {
  const id = headers["webhook-id"]
  const timestamp = headers["webhook-timestamp"]
  const signatures = headers["webhook-signature"]
  if (typeof id !== "string" || typeof timestamp !== "string" || typeof signatures !== "string") return false
  if (!/^\d+$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > 5 * 60) return false
  const content = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), rawBody])
  return signatures.split(" ").some((entry) => {
    const comma = entry.indexOf(",")
    if (comma < 0 || entry.slice(0, comma) !== "v1a") return false
    const signature = Buffer.from(entry.slice(comma + 1), "base64")
    return keys.some((key) => verify(null, content, key, signature))
  })
}

/** One request as the receiver got it. */
export interface Message {
  readonly id: string
  readonly timestamp: string
  readonly headers: IncomingHttpHeaders
  readonly rawBody: Buffer
  readonly verified: boolean
  /** Whether a request with this `webhook-id` came before (a retry or a redelivery). */
  readonly seen: boolean
  readonly answer: number
}

/** A receiver on 127.0.0.1, closed with the scope; `keys` are the `whpk_` keys it trusts (set before the first request). */
export const start = (answer: (id: string, seen: boolean, rawBody: Buffer) => number = () => 204) =>
  Effect.gen(function*() {
    const received = yield* Queue.unbounded<Message>()
    const trusted: Array<KeyObject> = []
    const seen = new Set<string>()
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const rawBody = Buffer.concat(chunks)
        const id = String(req.headers["webhook-id"] ?? "")
        const verified = verifies(req.headers, rawBody, trusted)
        const before = seen.has(id)
        seen.add(id)
        // An unverified request gets 401 and is not acted on.
        const status = verified ? answer(id, before, rawBody) : 401
        res.writeHead(status).end()
        Queue.unsafeOffer(received, {
          id,
          timestamp: String(req.headers["webhook-timestamp"] ?? ""),
          headers: req.headers,
          rawBody,
          verified,
          seen: before,
          answer: status
        })
      })
    })
    const port = yield* Effect.acquireRelease(
      Effect.async<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    return {
      url: `http://127.0.0.1:${port}/hook`,
      /** Trusts `whpk` from now on. */
      trust: (whpk: string) => void trusted.push(publicKeyOf(whpk)),
      /** The next request; fails after `seconds` rather than hang the test. */
      next: (seconds = 30) =>
        Queue.take(received).pipe(
          Effect.timeoutFail({ duration: `${seconds} seconds`, onTimeout: () => new Error("no webhook arrived") })
        )
    }
  }) satisfies Effect.Effect<unknown, never, Scope.Scope>
