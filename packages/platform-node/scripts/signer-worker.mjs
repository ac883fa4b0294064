/**
 * The script of a `NodeWebhookSigner` worker thread: it receives batches `{ keys, messages }`
 * (hex secret key seeds and the messages they sign, index for index) and answers them in order,
 * in arrays of at most `CHUNK` results as they are made (the hex signature, or `{ error }`), so
 * that the deliveries at the head of a large batch go on while the rest is signed. It signs with core's own
 * `@noble/ed25519` code (the secret key expanded once per key, the batch's points encoded with
 * one field inversion), its two SHA-512 hashes from node:crypto (the same bytes).
 * `signer-worker-source.mjs` compiles it, with noble, into the one string the pool evaluates
 * (`src/internal/SignerWorkerSource.ts`).
 */
import { createHash } from "node:crypto"
import { parentPort } from "node:worker_threads"
import { signAllWithCachedKeys } from "../../core/src/internal/crypto/ed25519.ts"

const seedPattern = /^[0-9a-fA-F]{64}$/
const sha512 = (bytes) => createHash("sha512").update(bytes).digest()
const hex = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")
const errorOf = (cause) => ({ error: cause instanceof Error ? cause.message : String(cause) })

/** Results of a batch sent back at a time. */
const CHUNK = 8

/** The results of `keys` and `messages`, index for index. */
const signChunk = (keys, messages) => {
  const out = new Array(messages.length)
  const valid = []
  for (let i = 0; i < messages.length; i++) {
    const key = keys[i]
    if (typeof key === "string" && seedPattern.test(key)) valid.push(i)
    else out[i] = { error: "the secret key is not 32 bytes of hex" }
  }
  const requests = valid.map((i) => ({
    message: messages[i],
    secretKey: new Uint8Array(Buffer.from(keys[i], "hex")),
    cacheKey: keys[i]
  }))
  try {
    signAllWithCachedKeys(requests, sha512).forEach((signature, j) => (out[valid[j]] = hex(signature)))
  } catch {
    // One bad request spoils the chunk: each is signed alone, so only it fails.
    requests.forEach((request, j) => {
      try {
        out[valid[j]] = hex(signAllWithCachedKeys([request], sha512)[0])
      } catch (cause) {
        out[valid[j]] = errorOf(cause)
      }
    })
  }
  return out
}

parentPort.on("message", ({ keys, messages }) => {
  for (let from = 0; from < messages.length; from += CHUNK) {
    parentPort.postMessage(signChunk(keys.slice(from, from + CHUNK), messages.slice(from, from + CHUNK)))
  }
})
