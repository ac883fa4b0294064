/**
 * Verification of a webhook by its receiver, in either scheme appexec signs with
 * (`WebhookSignature`): the interface's (`verifyWebhook`, docs/api.md#signature: the hex Ed25519
 * signature of `timestamp + "." + rawBody`) or Standard Webhooks (`verifyStandardWebhook`: a
 * `v1a` signature of `id.timestamp.rawBody`). Either way the timestamp must lie within the
 * tolerance of the receiver's clock and the signature must verify against a key of the published
 * key set. Runtime-neutral (`@noble/ed25519`), synchronous, never throws.
 */
import { Clock, Effect, Either, Encoding, Schema } from "effect"
import { ed, fromHex } from "./internal/crypto/ed25519.js"
import { publicKeyBytes } from "./internal/crypto/jwk.js"
import {
  names,
  publicKeyOfText,
  signedMessage,
  STANDARD_HEADERS,
  STANDARD_VERSION,
  standardMessage
} from "./WebhookSignature.js"

/** Why a webhook was rejected. */
export const Rejection = Schema.Literal(
  /** The signature or timestamp header is absent. */
  "missing_header",
  /** The timestamp header is not Unix seconds. */
  "invalid_timestamp",
  /** The timestamp is older than the tolerance: a replay, or a very late delivery. */
  "stale_timestamp",
  /** The timestamp is ahead of the receiver's clock by more than the tolerance. */
  "future_timestamp",
  /** The signature header is not 64 bytes of hex (Standard Webhooks: holds no `v1a` signature of 64 bytes). */
  "malformed_signature",
  /** No key of the set verifies the signature: the body or timestamp was altered, or the sender is not appexec. */
  "bad_signature",
  /** The key set holds no key that could have signed (empty, or not the key id the sender named): refetch it. */
  "no_matching_key"
)
export type Rejection = typeof Rejection.Type

/** A rejected webhook; answer it with 401 and do not act on the body. */
export class WebhookVerificationError
  extends Schema.TaggedError<WebhookVerificationError>()("WebhookVerificationError", {
    reason: Rejection,
    message: Schema.String
  })
{}

/** What a verified webhook tells the receiver besides its body. */
export interface VerifiedWebhook {
  /** The execution id: the same on every attempt, the key to de-duplicate deliveries. */
  readonly requestId: string | null
  /** The user whose key started the execution. */
  readonly userId: string | null
  /** The signed timestamp, Unix seconds. */
  readonly timestamp: number
  /** The `kid` of the key that verified. */
  readonly kid: string | null
}

/** Request headers as Node (`IncomingHttpHeaders`) or fetch (`Headers`) give them. */
export type HeadersLike =
  | { readonly get: (name: string) => string | null }
  | Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/** A key set as fetched from `GET /v1/webhooks/signing-key` (docs/api.md#jwk), parsed JSON. */
export interface KeySetLike {
  readonly keys: ReadonlyArray<
    {
      readonly kty?: unknown
      readonly crv?: unknown
      readonly x?: unknown
      readonly kid?: unknown
      readonly whpk?: unknown
    }
  >
}

/** Options of a verification. */
export interface VerifyOptions {
  /** Largest accepted distance between the timestamp and `now` (default 300, docs/api.md#signature). */
  readonly toleranceSeconds?: number
  /** The receiver's current time, a `Date` or epoch milliseconds (default: the system clock). */
  readonly now?: Date | number
  /** Brand word of the header names (default `Service`). */
  readonly brand?: string
}

/** A header's value from Node's or fetch's headers, by its name in any case (the first of a repeated one). */
export const headerValue = (headers: HeadersLike, name: string): string | undefined => {
  if (typeof headers.get === "function") {
    const value = (headers as { readonly get: (name: string) => string | null }).get(name)
    return value ?? undefined
  }
  const record = headers as Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  const wanted = name.toLowerCase()
  for (const key of Object.keys(record)) {
    if (key.toLowerCase() !== wanted) continue
    const value = record[key]
    return typeof value === "string" ? value : value?.[0]
  }
  return undefined
}

const reject = (reason: Rejection, message: string) => Either.left(new WebhookVerificationError({ reason, message }))

/** The rejection of a timestamp (Unix seconds) outside the tolerance of `options`, if it is. */
const lateness = (timestamp: string, options: VerifyOptions) => {
  const tolerance = options.toleranceSeconds ?? 300
  const nowMs = options.now === undefined
    ? Date.now()
    : typeof options.now === "number"
    ? options.now
    : options.now.getTime()
  const skew = Number(timestamp) - Math.floor(nowMs / 1000)
  if (skew < -tolerance) {
    return reject("stale_timestamp", `The timestamp is ${-skew} s old; at most ${tolerance} s is accepted.`)
  }
  if (skew > tolerance) {
    return reject("future_timestamp", `The timestamp is ${skew} s ahead; at most ${tolerance} s is accepted.`)
  }
  return undefined
}

/** Whether `signature` of `message` verifies with `publicKey` (a malformed key or signature does not). */
const verifies = (signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean =>
  Either.getOrElse(Either.try(() => ed.verify(signature, message, publicKey)), () => false)

/**
 * Verifies a webhook from its raw body (the bytes received, before any JSON parsing), its
 * headers and the published key set. Synchronous; never throws.
 */
export const verifyWebhook = (
  rawBody: Uint8Array | string,
  headers: HeadersLike,
  keySet: KeySetLike,
  options: VerifyOptions = {}
): Either.Either<VerifiedWebhook, WebhookVerificationError> => {
  const h = names(options.brand)
  const signature = headerValue(headers, h.signature)
  const timestamp = headerValue(headers, h.timestamp)
  if (signature === undefined) return reject("missing_header", `The ${h.signature} header is missing.`)
  if (timestamp === undefined) return reject("missing_header", `The ${h.timestamp} header is missing.`)
  if (!/^\d{1,15}$/.test(timestamp)) {
    return reject("invalid_timestamp", `The ${h.timestamp} header is not Unix seconds.`)
  }

  const late = lateness(timestamp, options)
  if (late !== undefined) return late
  const seconds = Number(timestamp)

  const signatureBytes = fromHex(signature.trim(), 64)
  if (signatureBytes === undefined) {
    return reject("malformed_signature", `The ${h.signature} header is not a 64-byte hex signature.`)
  }

  const keyId = headerValue(headers, h.keyId)
  const candidates = keySet.keys
    .filter((k) => keyId === undefined || k.kid === keyId)
    .flatMap((k) => {
      const publicKey = publicKeyBytes(k)
      return publicKey === undefined ? [] : [{ publicKey, kid: typeof k.kid === "string" ? k.kid : null }]
    })
  if (candidates.length === 0) {
    return reject(
      "no_matching_key",
      keyId === undefined
        ? "The key set holds no Ed25519 key."
        : `The key set has no key '${keyId}'; fetch the key set again.`
    )
  }

  const message = signedMessage(timestamp, rawBody)
  for (const candidate of candidates) {
    if (verifies(signatureBytes, message, candidate.publicKey)) {
      return Either.right({
        requestId: headerValue(headers, h.requestId) ?? null,
        userId: headerValue(headers, h.userId) ?? null,
        timestamp: seconds,
        kid: candidate.kid
      })
    }
  }
  return reject("bad_signature", "The signature does not match the body and timestamp.")
}

/** `verifyWebhook` as an Effect that reads the time from `Clock`. */
export const verify = (
  rawBody: Uint8Array | string,
  headers: HeadersLike,
  keySet: KeySetLike,
  options: Omit<VerifyOptions, "now"> = {}
): Effect.Effect<VerifiedWebhook, WebhookVerificationError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => verifyWebhook(rawBody, headers, keySet, { ...options, now }))

/** What a verified Standard Webhooks request tells the receiver besides its body. */
export interface VerifiedStandardWebhook {
  /** `webhook-id`: the same on every attempt of one message, the key to de-duplicate deliveries. */
  readonly webhookId: string
  /** The signed timestamp, Unix seconds. */
  readonly timestamp: number
  /** The `kid` of the key that verified, when the key set names it. */
  readonly kid: string | null
}

/** Keys that verify Standard Webhooks signatures: a key set as published (its `whpk`, else `x`), or `whpk_…` texts. */
export type StandardKeys = KeySetLike | ReadonlyArray<string>

/** The public keys of `keys`, with their `kid` where the key set gives one. */
const standardCandidates = (keys: StandardKeys) => {
  if (Array.isArray(keys)) {
    return (keys as ReadonlyArray<string>).flatMap((text) => {
      const publicKey = publicKeyOfText(text)
      return publicKey === undefined ? [] : [{ publicKey, kid: null }]
    })
  }
  return (keys as KeySetLike).keys.flatMap((k) => {
    const publicKey = (typeof k.whpk === "string" ? publicKeyOfText(k.whpk) : undefined) ?? publicKeyBytes(k)
    return publicKey === undefined ? [] : [{ publicKey, kid: typeof k.kid === "string" ? k.kid : null }]
  })
}

/** The 64-byte signatures of the `v1a` entries of a `webhook-signature` value (other versions ignored). */
const v1aSignatures = (header: string): Array<Uint8Array> =>
  header.split(" ").flatMap((entry) => {
    const comma = entry.indexOf(",")
    if (comma < 0 || entry.slice(0, comma) !== STANDARD_VERSION) return []
    const bytes = Either.getOrUndefined(Encoding.decodeBase64(entry.slice(comma + 1)))
    return bytes?.length === 64 ? [bytes] : []
  })

/**
 * Verifies a request signed as Standard Webhooks (standardwebhooks.com) specifies, from its raw
 * body (the bytes received, before any JSON parsing), its `webhook-id`, `webhook-timestamp` and
 * `webhook-signature` headers, and the keys it trusts: a `v1a` signature of
 * `{webhook-id}.{webhook-timestamp}.{body}` must verify against one of them (other versions in
 * the header are ignored), and the timestamp must lie within `toleranceSeconds` (default 300).
 * `brand` is not used: these header names are the specification's. Synchronous; never throws.
 */
export const verifyStandardWebhook = (
  rawBody: Uint8Array | string,
  headers: HeadersLike,
  keys: StandardKeys,
  options: VerifyOptions = {}
): Either.Either<VerifiedStandardWebhook, WebhookVerificationError> => {
  const id = headerValue(headers, STANDARD_HEADERS.id)
  const timestamp = headerValue(headers, STANDARD_HEADERS.timestamp)
  const signature = headerValue(headers, STANDARD_HEADERS.signature)
  if (id === undefined) return reject("missing_header", `The ${STANDARD_HEADERS.id} header is missing.`)
  if (timestamp === undefined) return reject("missing_header", `The ${STANDARD_HEADERS.timestamp} header is missing.`)
  if (signature === undefined) return reject("missing_header", `The ${STANDARD_HEADERS.signature} header is missing.`)
  if (!/^\d{1,15}$/.test(timestamp)) {
    return reject("invalid_timestamp", `The ${STANDARD_HEADERS.timestamp} header is not Unix seconds.`)
  }
  const late = lateness(timestamp, options)
  if (late !== undefined) return late
  const signatures = v1aSignatures(signature)
  if (signatures.length === 0) {
    return reject(
      "malformed_signature",
      `The ${STANDARD_HEADERS.signature} header holds no ${STANDARD_VERSION} signature of 64 bytes.`
    )
  }
  const candidates = standardCandidates(keys)
  if (candidates.length === 0) return reject("no_matching_key", "The keys hold no Ed25519 public key.")
  const message = standardMessage(id, timestamp, rawBody)
  for (const candidate of candidates) {
    if (signatures.some((bytes) => verifies(bytes, message, candidate.publicKey))) {
      return Either.right({ webhookId: id, timestamp: Number(timestamp), kid: candidate.kid })
    }
  }
  return reject("bad_signature", "No v1a signature matches the body, id and timestamp with these keys.")
}

/** `verifyStandardWebhook` as an Effect that reads the time from `Clock`. */
export const verifyStandard = (
  rawBody: Uint8Array | string,
  headers: HeadersLike,
  keys: StandardKeys,
  options: Omit<VerifyOptions, "now"> = {}
): Effect.Effect<VerifiedStandardWebhook, WebhookVerificationError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => verifyStandardWebhook(rawBody, headers, keys, { ...options, now }))
