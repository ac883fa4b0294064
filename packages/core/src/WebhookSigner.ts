/**
 * The webhook signature of SPEC §6.3: Ed25519 over the bytes of the timestamp header value, a
 * period, and the raw body exactly as sent; the signature travels as hex.
 */
import { Either } from "effect"
import { ed, fromHex, toHex } from "./internal/ed25519.js"

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

/** Hex Ed25519 signature of `message` with a 32-byte secret key seed given as hex. */
export const signHex = (message: Uint8Array, secretKeyHex: string): Either.Either<string, Error> => {
  const secretKey = fromHex(secretKeyHex, 32)
  if (secretKey === undefined) return Either.left(new Error("the secret key is not 32 bytes of hex"))
  return Either.try({
    try: () => toHex(ed.sign(message, secretKey)),
    catch: (cause) => (cause instanceof Error ? cause : new Error(String(cause)))
  })
}

/** Signs one webhook attempt: the signature of `timestamp + "." + rawBody`, hex. */
export const signWebhook = (
  timestamp: string,
  rawBody: Uint8Array | string,
  secretKeyHex: string
): Either.Either<string, Error> => signHex(signedMessage(timestamp, rawBody), secretKeyHex)
