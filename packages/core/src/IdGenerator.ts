/**
 * Port: identifiers and secret tokens, so that tests can make them deterministic.
 */
import { Context, Effect, Encoding, Layer } from "effect"

/** Source of ids and random tokens. */
export class IdGenerator extends Context.Tag("@appexec/core/IdGenerator")<
  IdGenerator,
  {
    /** A fresh UUID (lower-case, hyphenated). */
    readonly uuid: Effect.Effect<string>
    /** `bytes` random bytes, base64url-encoded; used for API keys and signed paths. */
    readonly token: (bytes: number) => Effect.Effect<string>
  }
>() {
  /**
   * Time-ordered ids (`timeOrderedUuid`) and cryptographically random tokens from Web Crypto (the
   * production default, in every runtime).
   */
  static readonly random = Layer.succeed(IdGenerator, {
    uuid: Effect.sync(() => timeOrderedUuid()),
    token: (bytes) =>
      Effect.sync(() => Encoding.encodeBase64Url(globalThis.crypto.getRandomValues(new Uint8Array(bytes))))
  })
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))

/** Random bytes drawn in blocks: one call to Web Crypto per 409 ids (10 bytes each) rather than one each. */
const POOL_BYTES = 4096
const pool = new Uint8Array(POOL_BYTES)
let poolAt = POOL_BYTES

/** The last id's milliseconds and counter: ids made in one process never go backwards. */
let lastMs = 0
let counter = 0

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then a 12-bit counter within the
 * millisecond (starting at a random value below 2,048, so that it rarely overflows; on overflow
 * the millisecond moves on by one), then 62 random bits. Ids sort by when they were made, so a
 * new row's id lands at the end of the id index, next to the previous one, where a random UUID
 * would land on a page of its own (a page written per row in a group commit of many rows); ids
 * made in one process are strictly increasing. They tell the time they were made to the
 * millisecond, which every record says anyway (`createdAt`); 62 random bits keep them
 * unguessable in practice, and none is a secret (tokens are).
 */
export const timeOrderedUuid = (): string => {
  if (poolAt + 10 > POOL_BYTES) {
    globalThis.crypto.getRandomValues(pool)
    poolAt = 0
  }
  const at = poolAt
  poolAt += 10
  let ms = Date.now()
  if (ms > lastMs) {
    lastMs = ms
    counter = ((pool[at]! << 8) | pool[at + 1]!) & 0x7ff
  } else {
    ms = lastMs
    counter += 1
    if (counter > 0xfff) {
      ms = lastMs = lastMs + 1
      counter = 0
    }
  }
  const high = Math.floor(ms / 0x1000000)
  const low = ms % 0x1000000
  return HEX[(high >>> 16) & 0xff]! + HEX[(high >>> 8) & 0xff]! + HEX[high & 0xff]! + HEX[(low >>> 16) & 0xff]! +
    "-" + HEX[(low >>> 8) & 0xff]! + HEX[low & 0xff]! +
    "-" + HEX[0x70 | (counter >>> 8)]! + HEX[counter & 0xff]! +
    "-" + HEX[0x80 | (pool[at + 2]! & 0x3f)]! + HEX[pool[at + 3]!]! +
    "-" + HEX[pool[at + 4]!]! + HEX[pool[at + 5]!]! + HEX[pool[at + 6]!]! + HEX[pool[at + 7]!]! + HEX[pool[at + 8]!]! +
    HEX[pool[at + 9]!]!
}
