/**
 * The format of a completion webhook's signature: the request headers (named with the
 * configurable brand word, `X-Service-Webhook-Signature` by default) and the signed message —
 * the timestamp header value, a period, and the raw body exactly as sent. `SigningKeys` signs it;
 * `WebhookVerifier` (and any receiver) checks it.
 */

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
