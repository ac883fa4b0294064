/**
 * The Ed25519 signing appexec does with `@noble/ed25519` (the secret key expanded once, a batch's
 * points encoded with one inversion) gives the bytes of RFC 8032: the same as noble's own `sign`
 * and as node:crypto's, one message or many, with one key or several.
 */
import { describe, expect, it } from "@effect/vitest"
import { createPrivateKey, sign as nodeSign } from "node:crypto"
import { ed, signAllWithCachedKeys, signWithCachedKey, toHex } from "../src/internal/crypto/ed25519.js"

const seed = (n: number) => new Uint8Array(32).map((_, i) => (i * 31 + n * 17 + 5) & 255)
const message = (n: number) =>
  new TextEncoder().encode(`${1_800_000_000 + n}.{"data":{"n":${n},"pad":"${"x".repeat(n * 7)}"}}`)
/** node:crypto's signature with the same seed (PKCS#8 of a raw Ed25519 seed). */
const viaNode = (secret: Uint8Array, bytes: Uint8Array) =>
  nodeSign(
    null,
    bytes,
    createPrivateKey({
      key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), secret]),
      format: "der",
      type: "pkcs8"
    })
  ).toString("hex")

describe("Ed25519 signing", () => {
  it("one signature is noble's and node:crypto's", () => {
    for (let n = 0; n < 5; n++) {
      const signature = signWithCachedKey(message(n), seed(n), `k${n}`)
      expect(toHex(signature)).toBe(toHex(ed.sign(message(n), seed(n))))
      expect(toHex(signature)).toBe(viaNode(seed(n), message(n)))
    }
  })

  it("a batch, with several keys and repeated messages, signs each as alone", () => {
    const requests = Array.from({ length: 24 }, (_, i) => ({
      message: message(i % 9),
      secretKey: seed(i % 3),
      cacheKey: `key-${i % 3}`
    }))
    const signatures = signAllWithCachedKeys(requests)
    expect(signatures).toHaveLength(24)
    requests.forEach((request, i) => {
      expect(toHex(signatures[i]!)).toBe(viaNode(request.secretKey, request.message))
    })
    expect(signAllWithCachedKeys([])).toEqual([])
  })
})
