/**
 * The script of a `NodeWebhookSigner` worker thread: it receives batches `{ keys, messages }`
 * (hex secret key seeds and the messages they sign, index for index) and answers each with an
 * array of the same length: the hex signature, or `{ error }`. It signs with core's own
 * `@noble/ed25519` code (the secret key expanded once per key), its two SHA-512 hashes from
 * node:crypto (the same bytes, a tenth of the time). `signer-worker-source.mjs`
 * compiles it, with noble, into the one string the pool evaluates (`src/internal/SignerWorkerSource.ts`).
 */
import { createHash } from "node:crypto"
import { parentPort } from "node:worker_threads"
import { signWithCachedKey } from "../../core/src/internal/ed25519.ts"

const seedPattern = /^[0-9a-fA-F]{64}$/
const sha512 = (bytes) => createHash("sha512").update(bytes).digest()

parentPort.on("message", ({ keys, messages }) => {
  const out = new Array(messages.length)
  for (let i = 0; i < messages.length; i++) {
    const key = keys[i]
    try {
      if (typeof key !== "string" || !seedPattern.test(key)) throw new Error("the secret key is not 32 bytes of hex")
      const signature = signWithCachedKey(messages[i], new Uint8Array(Buffer.from(key, "hex")), key, sha512)
      out[i] = Buffer.from(signature.buffer, signature.byteOffset, signature.byteLength).toString("hex")
    } catch (cause) {
      out[i] = { error: cause instanceof Error ? cause.message : String(cause) }
    }
  }
  parentPort.postMessage(out)
})
