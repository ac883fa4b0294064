import { AppexecConfig, IdGenerator, SigningKeys, WebhookSignature, WebhookVerifier } from "@appexec/core"
import { MemorySigningKeyStore } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, TestClock } from "effect"

const keysLayer = SigningKeys.layer.pipe(
  Layer.provide(
    Layer.mergeAll(MemorySigningKeyStore.layer, IdGenerator.IdGenerator.random, AppexecConfig.AppexecConfig.layer())
  )
)

const body = JSON.stringify({ data: { executionId: "4f0c3f2e-0000-4000-8000-000000000001", status: "completed" } })
const NOW = 1_800_000_000_000

/** A webhook signed at `NOW` the way the dispatcher signs it. */
const signed = Effect.gen(function*() {
  const keys = yield* SigningKeys.SigningKeys
  const timestamp = WebhookSignature.timestampOf(NOW)
  const { kid, signature } = yield* keys.sign(WebhookSignature.signedMessage(timestamp, body))
  const headers: Record<string, string> = {
    "x-service-webhook-signature": signature,
    "x-service-webhook-timestamp": timestamp,
    "x-service-webhook-request-id": "4f0c3f2e-0000-4000-8000-000000000001",
    "x-service-webhook-user-id": "9a1b2c3d-0000-4000-8000-000000000002",
    "x-service-webhook-key-id": kid
  }
  return { headers, keySet: yield* keys.keySet, kid, timestamp }
})

const reasonOf = (result: Either.Either<WebhookVerifier.VerifiedWebhook, WebhookVerifier.WebhookVerificationError>) =>
  Either.match(result, { onLeft: (e) => e.reason, onRight: () => "ok" as const })

describe("verifyWebhook", () => {
  it.effect("accepts an untouched webhook and reports its ids", () =>
    Effect.gen(function*() {
      const { headers, keySet, kid } = yield* signed
      const result = WebhookVerifier.verifyWebhook(body, headers, keySet, { now: NOW })
      expect(result).toEqual(
        Either.right({
          requestId: "4f0c3f2e-0000-4000-8000-000000000001",
          userId: "9a1b2c3d-0000-4000-8000-000000000002",
          timestamp: NOW / 1000,
          kid
        })
      )
      // Header names are case-insensitive; fetch `Headers` work as well as Node's header object.
      expect(
        reasonOf(
          WebhookVerifier.verifyWebhook(new TextEncoder().encode(body), new Headers(headers), keySet, {
            now: new Date(NOW)
          })
        )
      ).toBe("ok")
      // The key id header is optional: without it every key of the set is tried.
      const { ["x-service-webhook-key-id"]: _, ...withoutKid } = headers
      expect(reasonOf(WebhookVerifier.verifyWebhook(body, withoutKid, keySet, { now: NOW }))).toBe("ok")
    }).pipe(Effect.provide(keysLayer)))

  it.effect("rejects a tampered body", () =>
    Effect.gen(function*() {
      const { headers, keySet } = yield* signed
      expect(
        reasonOf(WebhookVerifier.verifyWebhook(body.replace("completed", "failed"), headers, keySet, { now: NOW }))
      ).toBe("bad_signature")
      expect(reasonOf(WebhookVerifier.verifyWebhook(`${body} `, headers, keySet, { now: NOW }))).toBe("bad_signature")
    }).pipe(Effect.provide(keysLayer)))

  it.effect("rejects a tampered timestamp, even one still inside the window", () =>
    Effect.gen(function*() {
      const { headers, keySet, timestamp } = yield* signed
      const moved = { ...headers, "x-service-webhook-timestamp": String(Number(timestamp) + 1) }
      expect(reasonOf(WebhookVerifier.verifyWebhook(body, moved, keySet, { now: NOW }))).toBe("bad_signature")
    }).pipe(Effect.provide(keysLayer)))

  it.effect("rejects a stale or future timestamp outside the tolerance, and accepts the edges", () =>
    Effect.gen(function*() {
      const { headers, keySet } = yield* signed
      const at = (now: number, toleranceSeconds?: number) =>
        reasonOf(
          WebhookVerifier.verifyWebhook(
            body,
            headers,
            keySet,
            toleranceSeconds === undefined ? { now } : { now, toleranceSeconds }
          )
        )
      expect(at(NOW + 300_000)).toBe("ok")
      expect(at(NOW + 301_000)).toBe("stale_timestamp")
      expect(at(NOW - 300_000)).toBe("ok")
      expect(at(NOW - 301_000)).toBe("future_timestamp")
      expect(at(NOW + 60_000, 30)).toBe("stale_timestamp")
    }).pipe(Effect.provide(keysLayer)))

  it.effect("names a missing header, a malformed timestamp or signature, and a key set without the key", () =>
    Effect.gen(function*() {
      const { headers, keySet } = yield* signed
      const { ["x-service-webhook-signature"]: _s, ...noSignature } = headers
      const { ["x-service-webhook-timestamp"]: _t, ...noTimestamp } = headers
      expect(reasonOf(WebhookVerifier.verifyWebhook(body, noSignature, keySet, { now: NOW }))).toBe("missing_header")
      expect(reasonOf(WebhookVerifier.verifyWebhook(body, noTimestamp, keySet, { now: NOW }))).toBe("missing_header")
      expect(
        reasonOf(
          WebhookVerifier.verifyWebhook(body, { ...headers, "x-service-webhook-timestamp": "soon" }, keySet, {
            now: NOW
          })
        )
      ).toBe(
        "invalid_timestamp"
      )
      expect(
        reasonOf(
          WebhookVerifier.verifyWebhook(body, { ...headers, "x-service-webhook-signature": "abc" }, keySet, {
            now: NOW
          })
        )
      ).toBe(
        "malformed_signature"
      )
      expect(reasonOf(WebhookVerifier.verifyWebhook(body, headers, { keys: [] }, { now: NOW }))).toBe("no_matching_key")
      expect(
        reasonOf(
          WebhookVerifier.verifyWebhook(body, { ...headers, "x-service-webhook-key-id": "unknown" }, keySet, {
            now: NOW
          })
        )
      ).toBe(
        "no_matching_key"
      )
    }).pipe(Effect.provide(keysLayer)))

  it.effect("a signature by a key outside the set is a bad signature", () =>
    Effect.gen(function*() {
      const { headers } = yield* signed
      const other = yield* Effect.flatMap(SigningKeys.SigningKeys, (k) => k.keySet).pipe(Effect.provide(keysLayer))
      const { ["x-service-webhook-key-id"]: _, ...withoutKid } = headers
      expect(reasonOf(WebhookVerifier.verifyWebhook(body, withoutKid, other, { now: NOW }))).toBe("bad_signature")
    }).pipe(Effect.provide(keysLayer)))

  it.effect("the Effect form reads the time from Clock", () =>
    Effect.gen(function*() {
      const { headers, keySet } = yield* signed
      yield* TestClock.setTime(NOW + 10_000)
      expect((yield* WebhookVerifier.verify(body, headers, keySet)).timestamp).toBe(NOW / 1000)
      yield* TestClock.setTime(NOW + 400_000)
      expect((yield* Effect.flip(WebhookVerifier.verify(body, headers, keySet))).reason).toBe("stale_timestamp")
    }).pipe(Effect.provide(keysLayer)))

  it("a custom brand word changes the header names", () => {
    expect(Either.isLeft(WebhookVerifier.verifyWebhook(body, {}, { keys: [] }, { brand: "Acme" }))).toBe(true)
    const result = WebhookVerifier.verifyWebhook(body, { "x-acme-webhook-timestamp": "1" }, { keys: [] }, {
      brand: "Acme"
    })
    expect(Either.isLeft(result) && result.left.message).toContain("X-Acme-Webhook-Signature")
  })
})

/** A Standard Webhooks request signed at `NOW` the way the dispatcher signs it. */
const signedStandard = Effect.gen(function*() {
  const keys = yield* SigningKeys.SigningKeys
  const timestamp = WebhookSignature.timestampOf(NOW)
  const id = "1f81eb52-5198-4599-803e-771906343485"
  const { signatures } = yield* keys.signAll(
    WebhookSignature.attemptMessages(id, timestamp, new TextEncoder().encode(body))
  )
  const headers: Record<string, string> = {
    "webhook-id": id,
    "webhook-timestamp": timestamp,
    "webhook-signature": WebhookSignature.standardSignature(signatures[1]!)
  }
  return { headers, keySet: yield* keys.keySet, id }
})

const standardReason = (
  result: Either.Either<WebhookVerifier.VerifiedStandardWebhook, WebhookVerifier.WebhookVerificationError>
) => Either.match(result, { onLeft: (e) => e.reason, onRight: () => "ok" as const })

describe("verifyStandardWebhook", () => {
  it.effect("accepts an untouched request with the key set or its whpk texts, and refuses every altered part", () =>
    Effect.gen(function*() {
      const { headers, id, keySet } = yield* signedStandard
      const whpks = keySet.keys.map((k) => k.whpk!)
      const at = (h: Record<string, string>, b = body, keys: WebhookVerifier.StandardKeys = keySet, now = NOW) =>
        standardReason(WebhookVerifier.verifyStandardWebhook(b, h, keys, { now }))
      expect(WebhookVerifier.verifyStandardWebhook(body, new Headers(headers), whpks, { now: NOW })).toEqual(
        Either.right({ webhookId: id, timestamp: NOW / 1000, kid: null })
      )
      expect(at(headers)).toBe("ok")
      // Other versions in the list are skipped; the v1a entry anywhere in it verifies.
      expect(
        at({
          ...headers,
          "webhook-signature": `v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= ${headers["webhook-signature"]}`
        })
      )
        .toBe("ok")
      expect(at(headers, `${body} `)).toBe("bad_signature")
      expect(at({ ...headers, "webhook-id": `${id}x` })).toBe("bad_signature")
      expect(at({ ...headers, "webhook-timestamp": String(NOW / 1000 + 1) })).toBe("bad_signature")
      // The interface's key set without `whpk` still verifies through `x`.
      expect(at(headers, body, { keys: keySet.keys.map(({ whpk: _, ...jwk }) => jwk) })).toBe("ok")
      expect(at(headers, body, [])).toBe("no_matching_key")
      expect(at(headers, body, ["whpk_not-a-key"])).toBe("no_matching_key")
      expect(at(headers, body, keySet, NOW + 301_000)).toBe("stale_timestamp")
      expect(at(headers, body, keySet, NOW - 301_000)).toBe("future_timestamp")
      const { ["webhook-id"]: _i, ...noId } = headers
      expect(at(noId)).toBe("missing_header")
      expect(at({ ...headers, "webhook-timestamp": "soon" })).toBe("invalid_timestamp")
      expect(at({ ...headers, "webhook-signature": "v1a,abc" })).toBe("malformed_signature")
    }).pipe(Effect.provide(keysLayer)))

  it.effect("a signature by a key outside the set is a bad signature; the Effect form reads Clock", () =>
    Effect.gen(function*() {
      const { headers, keySet } = yield* signedStandard
      const other = yield* Effect.flatMap(SigningKeys.SigningKeys, (k) => k.keySet).pipe(Effect.provide(keysLayer))
      expect(standardReason(WebhookVerifier.verifyStandardWebhook(body, headers, other, { now: NOW }))).toBe(
        "bad_signature"
      )
      yield* TestClock.setTime(NOW + 10_000)
      expect((yield* WebhookVerifier.verifyStandard(body, headers, keySet)).timestamp).toBe(NOW / 1000)
    }).pipe(Effect.provide(keysLayer)))
})
