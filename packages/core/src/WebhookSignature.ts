/**
 * The formats of a webhook's signatures. Two schemes sign every request, with the same key:
 *
 * - the interface's own (docs/api.md#signature): headers named with the configurable brand word
 *   (`X-Service-Webhook-Signature` by default), a hex Ed25519 signature of the timestamp header
 *   value, a period, and the raw body exactly as sent;
 * - Standard Webhooks (standardwebhooks.com, specification 1.0.0), sent beside it as its
 *   "Migrating" section says: `webhook-id` (the same on every attempt of one message),
 *   `webhook-timestamp` (Unix seconds) and `webhook-signature: v1a,<base64 Ed25519 signature>` of
 *   `{webhook-id}.{webhook-timestamp}.{body}`; public keys are written `whpk_` + base64 of their
 *   32 raw bytes.
 *
 * `SigningKeys` signs both messages of an attempt in one call (`attemptMessages`);
 * `WebhookVerifier` (and any receiver) checks either.
 */
import { Either, Encoding } from "effect"

/** The brand word used when none is configured. */
export const DEFAULT_BRAND = "Service"

/** Header names of one brand. */
export interface WebhookHeaderNames {
  /** Ed25519 signature of `timestamp + "." + rawBody`, hex. */
  readonly signature: string
  /** Unix time in seconds at which this attempt was signed. */
  readonly timestamp: string
  /** The execution id, the same on every attempt: receivers de-duplicate on it. */
  readonly requestId: string
  /** The user whose API key started the execution. */
  readonly userId: string
  /** The `kid` of the key that signed (an appexec addition to docs/api.md#webhooks; optional for receivers). */
  readonly keyId: string
}

/** The header names for `brand` (a token such as `Service` or `Acme`). */
export const names = (brand: string = DEFAULT_BRAND): WebhookHeaderNames => ({
  signature: `X-${brand}-Webhook-Signature`,
  timestamp: `X-${brand}-Webhook-Timestamp`,
  requestId: `X-${brand}-Webhook-Request-Id`,
  userId: `X-${brand}-Webhook-User-Id`,
  keyId: `X-${brand}-Webhook-Key-Id`
})

/**
 * Whether `brand` can be the brand word of the header names: 1 to 32 letters and digits, in words
 * joined by single hyphens (`Service`, `Acme-Cloud`). The one rule, read by the settings' check.
 */
export const isValidBrand = (brand: string): boolean =>
  brand.length <= 32 && /^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$/.test(brand)

const encoder = new TextEncoder()

/** The bytes to sign: `timestamp`, `.`, then `rawBody` unchanged. */
export const signedMessage = (timestamp: string, rawBody: Uint8Array | string): Uint8Array => {
  const head = encoder.encode(`${timestamp}.`)
  const body = typeof rawBody === "string" ? encoder.encode(rawBody) : rawBody
  const message = new Uint8Array(head.length + body.length)
  message.set(head, 0)
  message.set(body, head.length)
  return message
}

/** The Unix-seconds timestamp header value of a time in epoch milliseconds. */
export const timestampOf = (epochMs: number): string => String(Math.floor(epochMs / 1000))

/** The Standard Webhooks headers (lower case, as the specification writes them). */
export const STANDARD_HEADERS = {
  /** The message id: the same on every attempt of one message, another for every event. */
  id: "webhook-id",
  /** Unix time in seconds at which this attempt was signed. */
  timestamp: "webhook-timestamp",
  /** Space-separated `version,base64` signatures; appexec sends one, `v1a` (Ed25519). */
  signature: "webhook-signature"
} as const

/** The version tag of an Ed25519 signature in `webhook-signature`. */
export const STANDARD_VERSION = "v1a"

/** The prefix of a Standard Webhooks public key (`whpk_` + base64 of its 32 raw bytes). */
export const PUBLIC_KEY_PREFIX = "whpk_"

/** The bytes a Standard Webhooks signature covers: `id`, `.`, `timestamp`, `.`, then `rawBody` unchanged. */
export const standardMessage = (id: string, timestamp: string, rawBody: Uint8Array | string): Uint8Array =>
  signedMessage(`${id}.${timestamp}`, rawBody)

/**
 * The messages one attempt signs, in this order: the interface's (`signedMessage`) and the
 * Standard Webhooks one (`standardMessage`). `SigningKeys.signAll` signs both in one call.
 */
export const attemptMessages = (
  id: string,
  timestamp: string,
  rawBody: Uint8Array
): readonly [Uint8Array, Uint8Array] => [signedMessage(timestamp, rawBody), standardMessage(id, timestamp, rawBody)]

/** The `webhook-signature` value of a hex Ed25519 signature: `v1a,` and the signature's base64. */
export const standardSignature = (signatureHex: string): string =>
  `${STANDARD_VERSION},${
    Encoding.encodeBase64(Either.getOrElse(Encoding.decodeHex(signatureHex), () => new Uint8Array()))
  }`

/** The Standard Webhooks form of a 32-byte Ed25519 public key: `whpk_` + base64. */
export const publicKeyText = (publicKey: Uint8Array): string =>
  `${PUBLIC_KEY_PREFIX}${Encoding.encodeBase64(publicKey)}`

/** The 32 bytes of a `whpk_…` public key; `undefined` unless it is one. */
export const publicKeyOfText = (text: string): Uint8Array | undefined => {
  if (!text.startsWith(PUBLIC_KEY_PREFIX)) return undefined
  const encoded = text.slice(PUBLIC_KEY_PREFIX.length)
  if (!/^[A-Za-z0-9+/]{43}=$/.test(encoded)) return undefined
  const bytes = Either.getOrUndefined(Encoding.decodeBase64(encoded))
  return bytes?.length === 32 ? bytes : undefined
}
