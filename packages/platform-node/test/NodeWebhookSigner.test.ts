/**
 * The worker-thread webhook signer: its signatures verify with node:crypto, requests go in
 * batches, a worker that dies loses no request (they are signed in-thread) and is started again,
 * a worker that keeps dying gives way to in-thread signing, a bad key fails as a
 * `SignatureFailure`, and `SigningKeys` over the pool honours a rotation. The inline worker script
 * is the compiled form of `scripts/signer-worker.mjs`.
 */
import { AppexecConfig, SigningKeys, SigningKeyStore, WebhookSignature, WebhookSigner } from "@appexec/core"
import { MemorySigningKeyStore, SeededIds } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Fiber, Layer, TestClock } from "effect"
import { execFileSync } from "node:child_process"
import { createPrivateKey, createPublicKey, verify } from "node:crypto"
import { fileURLToPath } from "node:url"
import { NodeWebhookSigner } from "../src/index.js"
import { source } from "../src/internal/SignerWorkerSource.js"

/** A prefix of a worker's script that lets its first answer through and holds every later one. */
const holdingAfterFirst = `"use strict";{const{parentPort}=require("node:worker_threads");` +
  `const post=parentPort.postMessage.bind(parentPort);let answers=0;` +
  `parentPort.postMessage=(m)=>{if(answers++===0)post(m)}}\n`

const seedHex = "07".repeat(32)
/** The public key of `seedHex`, derived by node:crypto, independently of noble. */
const publicKey = createPublicKey(
  createPrivateKey({
    key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), Buffer.from(seedHex, "hex")]),
    format: "der",
    type: "pkcs8"
  })
)

const messages = (n: number) =>
  Array.from({ length: n }, (_, i) => WebhookSignature.signedMessage(`${1_800_000_000 + i}`, `{"data":{"n":${i}}}`))

const verifies = (message: Uint8Array, signature: string) =>
  verify(null, message, publicKey, Buffer.from(signature, "hex"))

/** Signs one message (a call of one). */
const signOne = (pool: NodeWebhookSigner.Pool, message: Uint8Array, key = seedHex) =>
  Effect.map(pool.signer.sign([message], key), (signatures) => signatures[0]!)

/** Signs every message at once (one fiber each). */
const signAll = (pool: NodeWebhookSigner.Pool, all: ReadonlyArray<Uint8Array>) =>
  Effect.forEach(all, (message) => signOne(pool, message), { concurrency: "unbounded" })

describe("NodeWebhookSigner", () => {
  it.scoped("signatures made on a worker verify with node:crypto, many to a message", () =>
    Effect.gen(function*() {
      const pool = yield* NodeWebhookSigner.makePool({ maxBatch: 16 })
      const all = messages(40)
      const signatures = yield* signAll(pool, all)
      all.forEach((message, i) => expect(verifies(message, signatures[i]!)).toBe(true))
      expect(verifies(all[0]!, signatures[1]!)).toBe(false)
      // The same bytes as core's in-thread signer (Ed25519 is deterministic).
      expect(signatures[3]).toBe(Either.getOrThrow(WebhookSigner.signNow(all[3]!, seedHex)))
      const stats = pool.stats()
      expect(stats).toMatchObject({ inWorkers: 40, inThread: 0, restarts: 0 })
      expect(stats.batches).toBeGreaterThanOrEqual(3)
      expect(stats.batches).toBeLessThan(40)
    }))

  it.scoped("one call signs both messages of an attempt, in order, with the bytes of the in-thread signer", () =>
    Effect.gen(function*() {
      const pool = yield* NodeWebhookSigner.makePool()
      const body = new TextEncoder().encode(`{"data":{"n":1}}`)
      const both = WebhookSignature.attemptMessages("0b7e4a3c-0000-4000-8000-000000000001", "1800000000", body)
      const signatures = yield* pool.signer.sign(both, seedHex)
      expect(signatures).toHaveLength(2)
      expect(verifies(both[0], signatures[0]!)).toBe(true)
      expect(verifies(both[1], signatures[1]!)).toBe(true)
      expect(signatures).toEqual(yield* WebhookSigner.inThread.sign(both, seedHex))
      expect(pool.stats()).toMatchObject({ inWorkers: 2, inThread: 0 })
      // One bad key fails the call.
      expect((yield* Effect.flip(pool.signer.sign(both, "abc")))._tag).toBe("SignatureFailure")
    }))

  it.scoped("a worker that dies with requests in hand loses none: they are signed in-thread, and it starts again", () =>
    Effect.gen(function*() {
      // Each worker answers its first batch and holds every later one, so that it surely holds the
      // next batch when it is terminated (a worker left to answer could be done before).
      const pool = yield* NodeWebhookSigner.makePool({ workerSource: holdingAfterFirst + source })
      const first = yield* signOne(pool, messages(1)[0]!)
      expect(verifies(messages(1)[0]!, first)).toBe(true)
      const worker = pool.workers()[0]!
      // The worker is terminated while it holds the next batch.
      const all = messages(30)
      const signing = yield* Effect.fork(signAll(pool, all))
      yield* Effect.async<void>((resume) => {
        const waitForBatch = () =>
          pool.stats().batches >= 2
            ? void worker.terminate().then(() => resume(Effect.void))
            : void setImmediate(waitForBatch)
        waitForBatch()
      })
      const signatures = yield* Effect.flatMap(Effect.succeed(signing), (f) => f.await).pipe(
        Effect.flatMap((exit) => exit)
      )
      all.forEach((message, i) => expect(verifies(message, signatures[i]!)).toBe(true))
      expect(pool.stats().inThread).toBeGreaterThan(0)
      // The next request goes to a new worker.
      const again = yield* signOne(pool, all[0]!)
      expect(again).toBe(signatures[0])
      expect(pool.workers()[0]).toBeDefined()
      expect(pool.workers()[0]).not.toBe(worker)
      expect(pool.stats().restarts).toBe(1)
    }))

  it.scoped("a worker that keeps dying gives way to in-thread signing after maxRestarts", () =>
    Effect.gen(function*() {
      const pool = yield* NodeWebhookSigner.makePool({ workerSource: "process.exit(3)", maxRestarts: 2 })
      for (const message of messages(6)) {
        expect(verifies(message, yield* signOne(pool, message))).toBe(true)
      }
      const stats = pool.stats()
      expect(stats).toMatchObject({ inWorkers: 0, inThread: 6, restarts: 2 })
      expect(pool.workers()).toEqual([undefined])
    }))

  it.scoped("a worker that does not answer in time is terminated; its batch is signed in-thread (virtual clock)", () =>
    Effect.gen(function*() {
      const pool = yield* NodeWebhookSigner.makePool({
        workerSource: "require('node:worker_threads').parentPort.on('message', () => {})",
        batchTimeoutMs: 5_000
      })
      const message = messages(1)[0]!
      const signing = yield* Effect.fork(signOne(pool, message))
      yield* Effect.async<void>((resume) => {
        const waitForBatch = () => (pool.stats().batches >= 1 ? resume(Effect.void) : void setImmediate(waitForBatch))
        waitForBatch()
      })
      const worker = pool.workers()[0]!
      yield* TestClock.adjust(4_999)
      expect(signing.unsafePoll()).toBeNull()
      yield* TestClock.adjust(1)
      const signature = yield* Fiber.join(signing)
      expect(verifies(message, signature)).toBe(true)
      expect(pool.stats()).toMatchObject({ inWorkers: 0, inThread: 1 })
      expect(pool.workers()[0]).not.toBe(worker)
    }))

  it.scoped("with no threads, every signature is made in-thread", () =>
    Effect.gen(function*() {
      const pool = yield* NodeWebhookSigner.makePool({ threads: 0 })
      const all = messages(5)
      const signatures = yield* signAll(pool, all)
      all.forEach((message, i) => expect(verifies(message, signatures[i]!)).toBe(true))
      expect(pool.stats()).toMatchObject({ inWorkers: 0, inThread: 5, batches: 0 })
      expect(pool.workers()).toEqual([])
    }))

  it.scoped("a key that is not 32 bytes of hex fails as a SignatureFailure", () =>
    Effect.gen(function*() {
      const pool = yield* NodeWebhookSigner.makePool()
      const failure = yield* Effect.flip(signOne(pool, messages(1)[0]!, "abc"))
      expect(failure._tag).toBe("SignatureFailure")
      expect(failure.reason).toContain("32 bytes")
    }))

  it.scoped("SigningKeys over the pool signs with the current key and follows a rotation", () =>
    Effect.gen(function*() {
      const pool = yield* NodeWebhookSigner.makePool()
      const keys = SigningKeys.layer.pipe(
        Layer.provide(
          Layer.mergeAll(
            Layer.succeed(SigningKeyStore.SigningKeyStore, yield* MemorySigningKeyStore.make),
            SeededIds.layer("pool"),
            AppexecConfig.AppexecConfig.layer({}),
            Layer.succeed(WebhookSigner.WebhookSigner, pool.signer)
          )
        )
      )
      yield* Effect.gen(function*() {
        const service = yield* SigningKeys.SigningKeys
        const message = messages(1)[0]!
        const check = (signed: { readonly kid: string; readonly signature: string }) =>
          Effect.map(service.keySet, (set) => {
            const jwk = set.keys.find((k) => k.kid === signed.kid)!
            const key = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: "jwk" })
            return verify(null, message, key, Buffer.from(signed.signature, "hex"))
          })
        const before = yield* service.sign(message)
        expect(yield* check(before)).toBe(true)
        const rotated = yield* service.rotate
        const after = yield* service.sign(message)
        expect(after.kid).toBe(rotated.kid)
        expect(after.kid).not.toBe(before.kid)
        expect(yield* check(after)).toBe(true)
      }).pipe(Effect.provide(keys))
      expect(pool.stats().inWorkers).toBe(2)
    }))

  it("the inline worker script is the compiled form of scripts/signer-worker.mjs", () => {
    const script = fileURLToPath(new URL("../scripts/signer-worker-source.mjs", import.meta.url))
    expect(() => execFileSync(process.execPath, [script, "--check"], { stdio: "pipe" })).not.toThrow()
  })
})
