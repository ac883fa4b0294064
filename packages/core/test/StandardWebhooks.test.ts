/**
 * appexec's Standard Webhooks signatures checked against the Standard Webhooks project's own
 * examples (github.com/standard-webhooks/standard-webhooks, main at b2fa7b8), not against
 * appexec's own code:
 *
 * - The specification (spec/standard-webhooks.md, 1.0.0) shows a `v1a` signature in its example
 *   headers, but not the key that made it, nor a v1a key anywhere: that signature cannot be
 *   reproduced or verified by anyone. What it does fix is the header's form, checked here.
 * - The reference libraries (merged, every language) share one vector, for the `v1` (HMAC-SHA256)
 *   scheme: key, message id, timestamp and payload, and the expected signature. Both schemes sign
 *   the same bytes, `{id}.{timestamp}.{payload}`; the vector is reproduced over
 *   `WebhookSignature.standardMessage` with node:crypto's HMAC, which proves those bytes.
 * - The closest official `v1a` vectors are in the project's own repository, in the open pull
 *   requests that add `v1a` to its Go library (#253, `webhook_asymmetric_test.go`,
 *   `TestAsymmetricWebhookSign`) and its JavaScript library (#308, `webhook.test.ts`, "v1a: sign
 *   function works"), over the same id, timestamp and payload. Not merged, so not yet the
 *   specification's word; both are reproduced byte for byte by appexec's signer (Ed25519 is
 *   deterministic) and verified by its verifier and by node:crypto.
 */
import { AppexecConfig, IdGenerator, SigningKeys, WebhookSignature, WebhookVerifier } from "@appexec/core"
import { MemorySigningKeyStore } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Encoding, Layer } from "effect"
import { createHmac, createPrivateKey, createPublicKey, verify } from "node:crypto"

/** The reference libraries' shared message (libraries/*: "sign function works"). */
const vector = {
  msgId: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: "1614265330",
  payload: `{"test": 2432232314}`
}

/** libraries/javascript/src/webhook.test.ts (and every other library's), merged. */
const v1 = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  expected: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
}

/** The v1a vectors of the open pull requests: each a 32-byte Ed25519 seed, base64, and the signature it makes. */
const v1a = [
  {
    source: "pull request #253 (Go), TestAsymmetricWebhookSign",
    seed: "VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=",
    expected: "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag=="
  },
  {
    source: "pull request #308 (JavaScript), v1a: sign function works (seed 0x01 × 32)",
    seed: Encoding.encodeBase64(new Uint8Array(32).fill(1)),
    expected: "v1a,Ykcu7AtGZGmZxFEH1Gaa2Nd7feY/CTuruoL4fqgnKwfbHU4DhemoVHZdvGfIvKvn4BIgwktLGGPGIr/i9nK7AA=="
  }
]

/** The example headers of the specification ("Webhook headers"). */
const specExample = {
  "webhook-id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
  "webhook-timestamp": "1674087231",
  "webhook-signature":
    "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg=="
}

/** The signing keys of an instance configured with `seed` (base64) as its private JWK. */
const keysWithSeed = (seed: string) =>
  SigningKeys.layer.pipe(
    Layer.provide(
      Layer.mergeAll(
        MemorySigningKeyStore.layer,
        IdGenerator.IdGenerator.random,
        AppexecConfig.AppexecConfig.layer({
          signingKeyJwk: {
            kty: "OKP",
            crv: "Ed25519",
            d: Encoding.encodeBase64Url(Either.getOrThrow(Encoding.decodeBase64(seed)))
          }
        })
      )
    )
  )

const at = Number(vector.timestamp) * 1000

describe("Standard Webhooks, against the project's own examples", () => {
  it("the signed bytes are the reference libraries': their v1 vector reproduces over standardMessage", () => {
    const message = WebhookSignature.standardMessage(vector.msgId, vector.timestamp, vector.payload)
    expect(new TextDecoder().decode(message)).toBe(`${vector.msgId}.${vector.timestamp}.${vector.payload}`)
    const key = Buffer.from(v1.secret.slice("whsec_".length), "base64")
    expect(`v1,${createHmac("sha256", key).update(message).digest("base64")}`).toBe(v1.expected)
  })

  for (const { expected, seed, source } of v1a) {
    it.effect(`the v1a vector of ${source} reproduces, and verifies with its whpk key`, () =>
      Effect.gen(function*() {
        const keys = yield* SigningKeys.SigningKeys
        const body = new TextEncoder().encode(vector.payload)
        const { signatures } = yield* keys.signAll(
          WebhookSignature.attemptMessages(vector.msgId, vector.timestamp, body)
        )
        expect(WebhookSignature.standardSignature(signatures[1]!)).toBe(expected)

        // The key set publishes the key as Standard Webhooks writes it.
        const { keys: [jwk] } = yield* keys.keySet
        const raw = Buffer.from(jwk!.x, "base64url")
        expect(jwk!.whpk).toBe(`whpk_${raw.toString("base64")}`)
        const headers = {
          "webhook-id": vector.msgId,
          "webhook-timestamp": vector.timestamp,
          "webhook-signature": expected
        }
        expect(WebhookVerifier.verifyStandardWebhook(vector.payload, headers, [jwk!.whpk!], { now: at })).toEqual(
          Either.right({ webhookId: vector.msgId, timestamp: Number(vector.timestamp), kid: null })
        )
        expect(
          Either.isRight(
            WebhookVerifier.verifyStandardWebhook(vector.payload, headers, yield* keys.keySet, { now: at })
          )
        ).toBe(true)
        // And with node:crypto alone, from the whpk text.
        const publicKey = createPublicKey({
          key: Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), raw]),
          format: "der",
          type: "spki"
        })
        expect(
          verify(
            null,
            Buffer.from(`${vector.msgId}.${vector.timestamp}.${vector.payload}`),
            publicKey,
            Buffer.from(expected.slice("v1a,".length), "base64")
          )
        ).toBe(true)
      }).pipe(Effect.provide(keysWithSeed(seed))))
  }

  it("the specification's example header parses: its v1a entry is found among others (its key is not published)", () => {
    const now = Number(specExample["webhook-timestamp"]) * 1000
    const reasonOf = (result: ReturnType<typeof WebhookVerifier.verifyStandardWebhook>) =>
      Either.match(result, { onLeft: (e) => e.reason, onRight: () => "ok" })
    // Well-formed, so it comes to the keys: none of the known ones made it.
    const known = v1a.map((v) => whpkOf(v.seed))
    expect(reasonOf(WebhookVerifier.verifyStandardWebhook("{}", specExample, known, { now }))).toBe("bad_signature")
    // Without its v1a entry, the header holds nothing appexec verifies.
    const v1Only = { ...specExample, "webhook-signature": specExample["webhook-signature"].split(" ")[0]! }
    expect(reasonOf(WebhookVerifier.verifyStandardWebhook("{}", v1Only, known, { now }))).toBe("malformed_signature")
  })
})

/** The `whpk_` text of the public key of a base64 seed, through node:crypto. */
function whpkOf(seedBase64: string): string {
  const privateKey = Buffer.concat([
    Buffer.from("302e020100300506032b657004220420", "hex"),
    Buffer.from(seedBase64, "base64")
  ])
  const spki = createPublicKey(createPrivateKey({ key: privateKey, format: "der", type: "pkcs8" })).export({
    format: "der",
    type: "spki"
  })
  return `whpk_${spki.subarray(-32).toString("base64")}`
}
