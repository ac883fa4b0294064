/**
 * Fair places among the uploads read at once, and the least pace of a body (docs/http.md#request-bodies):
 * the caps are per API key (4), per workspace (8) and per process (16), so 8 uploads trickling
 * under one key leave another workspace's upload (and another key's of the same workspace)
 * answered 201 at once, over real sockets; a body slower than 1 KiB/s over 10 s is cut with 408
 * and gives its place back (virtual time, `TestClock`), and over a real socket the 408 reaches the
 * client at once with the connection closed, without waiting for the rest of the body.
 */
import type { Authentication } from "@appexec/api"
import { MediaUrls } from "@appexec/core"
import { BuiltinNodes, builtinNodes } from "@appexec/nodes"
import { NodeListener } from "@appexec/platform-node"
import { TestHarness, TestHttpServer } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, Layer, Redacted, TestClock } from "effect"
import { type ClientRequest, type IncomingMessage, request as httpRequest } from "node:http"
import sharp from "sharp"
import type { AppexecHttp } from "../src/index.js"
import * as Endpoints from "../src/internal/Endpoints.js"
import type { ServerRequest } from "../src/internal/Exchange.js"
import * as UploadSlots from "../src/internal/UploadSlots.js"
import { SigningKeysTest } from "./fixtures.js"

/** An instance with the built-in nodes and signed media URLs on `baseUrl`. */
const instance = (baseUrl: string) =>
  Layer.provideMerge(SigningKeysTest, TestHarness.layer({ nodes: builtinNodes })).pipe(
    Layer.provideMerge(
      BuiltinNodes.layer({
        mediaUrls: MediaUrls.layer({
          mode: "signed",
          baseUrl,
          secret: Redacted.make("a media secret of at least thirty-two bytes"),
          ttlSeconds: 3600
        })
      })
    )
  )

/** A listener with `options` on a fresh socket, and the instance behind it; runs `test` with its origin. */
const served = <A, E, R>(options: AppexecHttp.Options, test: (origin: string) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const { origin, server } = yield* TestHttpServer.listening
    return yield* Effect.gen(function*() {
      server.on("request", yield* NodeListener.make({ logRequests: false, ...options }))
      return yield* test(origin)
    }).pipe(Effect.provide(instance(origin)))
  })

const photo = Effect.promise(() =>
  sharp({ create: { width: 8, height: 8, channels: 3, background: "#336699" } }).png().toBuffer().then((b) =>
    Uint8Array.from(b)
  )
)

/** An answer read whole: status, headers, JSON body. */
interface Answer {
  readonly status: number
  readonly headers: IncomingMessage["headers"]
  readonly body: { readonly data?: unknown; readonly error?: { readonly code: string; readonly message: string } }
}

const readAnswer = (response: IncomingMessage) =>
  new Promise<Answer>((resolve) => {
    const chunks: Array<Buffer> = []
    response.on("data", (chunk: Buffer) => chunks.push(chunk))
    response.on("end", () =>
      resolve({
        status: response.statusCode ?? 0,
        headers: response.headers,
        body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Answer["body"]
      }))
  })

/**
 * An upload that declares `declared` bytes and sends the first 16 only, then nothing (the request
 * stays open until the scope closes); its answer, when one comes, and whether the server closed
 * the connection.
 */
const trickle = (origin: string, key: string, declared = 100_000) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const request: ClientRequest = httpRequest(`${origin}/v1/uploads`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "image/png", "content-length": String(declared) }
      })
      const closed = new Promise<void>((resolve) => request.once("socket", (socket) => socket.once("close", resolve)))
      const answer = new Promise<Answer>((resolve) =>
        request.once("response", (response) => resolve(readAnswer(response)))
      )
      request.on("error", () => undefined)
      request.write(new Uint8Array(16))
      return { request, answer, closed }
    }),
    ({ request }) => Effect.sync(() => request.destroy())
  )

/** A whole upload of `bytes` with `fetch`. */
const upload = (origin: string, key: string, bytes: Uint8Array<ArrayBuffer>) =>
  Effect.promise(async () => {
    const response = await fetch(`${origin}/v1/uploads`, {
      method: "POST",
      body: bytes,
      headers: { "x-api-key": key, "content-type": "image/png" }
    })
    return { status: response.status, body: (await response.json()) as Answer["body"] }
  })

describe("fair places among the uploads read at once", () => {
  it.scoped("8 uploads trickling under one key leave another workspace's, and another key's, answered 201 at once", () =>
    served({}, (origin) =>
      Effect.gen(function*() {
        expect(UploadSlots.defaults).toEqual({ perKey: 4, perWorkspace: 8, total: 16 })
        const mallory = yield* TestHarness.signIn("mallory")
        yield* Effect.forEach(Array.from({ length: 8 }, (_, i) => i), () => trickle(origin, mallory.key))
        const image = yield* photo
        // Four of them hold the key's places (the four others wait, refused, for their bodies to
        // end): a whole upload of the same key is refused at once, saying it is the key's cap.
        let refused: Answer["body"] | undefined
        for (let tries = 0; refused === undefined && tries < 20; tries++) {
          const answer = yield* upload(origin, mallory.key, image)
          if (answer.status === 429) refused = answer.body
        }
        expect(refused?.error).toEqual({
          code: "rate_limited",
          message: "This API key is sending 4 uploads at once, the most one key may; retry after 1 s."
        })
        const alice = yield* TestHarness.signIn("alice")
        const other = yield* upload(origin, alice.key, image)
        expect([other.status, (other.body.data as { contentType: string }).contentType]).toEqual([201, "image/png"])
        // Another key of the trickling workspace has places of its own (the workspace's are 8).
        const sameWorkspace = yield* TestHarness.signIn("mallory")
        expect((yield* upload(origin, sameWorkspace.key, image)).status).toBe(201)
      })))

  it.scoped("the workspace's cap holds across its keys, and the process's across workspaces", () =>
    Effect.gen(function*() {
      const slots = UploadSlots.make({ perKey: 2, perWorkspace: 3, total: 4 })
      const take = (key: string, workspace: string) => slots.take(key, workspace)
      const held = [yield* take("k1", "w1"), yield* take("k1", "w1"), yield* take("k2", "w1")]
      expect(held.every(Either.isRight)).toBe(true)
      expect(yield* take("k1", "w1")).toEqual(Either.left("key"))
      expect(yield* take("k3", "w1")).toEqual(Either.left("workspace"))
      expect(Either.isRight(yield* take("k4", "w2"))).toBe(true)
      expect(yield* take("k5", "w3")).toEqual(Either.left("total"))
      // Giving a place back (twice: once) frees one of each.
      const first = held[0]!
      if (Either.isRight(first)) {
        yield* first.right
        yield* first.right
      }
      expect(Either.isRight(yield* take("k5", "w3"))).toBe(true)
      expect(yield* take("k3", "w1")).toEqual(Either.left("total"))
    }))
})

describe("the least pace of an upload's body", () => {
  /** A call of the upload endpoint whose body arrives when `arrived` is done, having received `progress.bytes` so far. */
  const uploadCall = (
    endpoint: Endpoints.Served,
    principal: Authentication.Principal,
    arrived: Deferred.Deferred<Uint8Array>,
    progress: { bytes: number }
  ) => {
    const request: ServerRequest = {
      method: "POST",
      url: "/v1/uploads",
      headers: { "content-type": "image/png" },
      remoteAddress: "127.0.0.1",
      body: () => Deferred.await(arrived),
      received: () => progress.bytes
    }
    return endpoint.run({ params: {}, query: {}, principal, request, requestId: "test" })
  }

  /** `upload` forked, once its pace is watched: its first look is scheduled (a sleep of the test clock). */
  const startWatched = <A, E, R>(upload: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      const before = (yield* TestClock.sleeps()).length
      const fiber = yield* Effect.fork(upload)
      for (let turn = 0; (yield* TestClock.sleeps()).length === before; turn++) {
        if (turn > 1_000) return yield* Effect.dieMessage("the upload's pace is not watched")
        yield* Effect.yieldNow()
      }
      return fiber
    })

  it.scoped("a body under 1 KiB/s over 10 s is cut with 408 and gives its place back; a steady one is not", () =>
    Effect.gen(function*() {
      const endpoints = yield* Endpoints.make({ uploadsAtOnce: 1 })
      const uploadFile = endpoints.find((e) => e.name === "uploadFile")!
      const alice = yield* TestHarness.signIn("alice")
      const image = yield* photo

      // 1,000 bytes a second: under 1 KiB/s. The first 10 s are its grace.
      const slow = { bytes: 0 }
      const never = yield* Deferred.make<Uint8Array>()
      const cut = yield* startWatched(Effect.flip(uploadCall(uploadFile, alice, never, slow)))
      for (let second = 1; second < 10; second++) {
        slow.bytes += 1_000
        yield* TestClock.adjust("1 second")
      }
      expect(cut.unsafePoll()).toBeNull()
      slow.bytes += 1_000
      yield* TestClock.adjust("1 second")
      const refused = yield* Fiber.join(cut)
      const response = refused._tag === "Refused" ? refused.response : undefined
      expect([response?.status, response?.headers["connection"]]).toEqual([408, "close"])
      expect(JSON.parse(String(response?.body))).toEqual({
        error: {
          code: "invalid_request",
          message:
            "The upload arrived too slowly: less than 1024 bytes per second over 10 s. Send it again at a steadier pace."
        }
      })

      // Its place is free again (the process takes one at a time here): a steady body takes it
      // and keeps it, 1,100 bytes a second for 30 s, until it has arrived.
      const steady = { bytes: 0 }
      const arrived = yield* Deferred.make<Uint8Array>()
      const kept = yield* startWatched(uploadCall(uploadFile, alice, arrived, steady))
      for (let second = 1; second <= 30; second++) {
        steady.bytes += 1_100
        yield* TestClock.adjust("1 second")
      }
      expect(kept.unsafePoll()).toBeNull()
      yield* Deferred.succeed(arrived, image)
      expect((yield* Fiber.join(kept)).status).toBe(201)
    }).pipe(Effect.provide(instance("http://127.0.0.1:1"))))

  it.scopedLive("over a real socket, the 408 reaches the client at once and the connection is closed", () =>
    served({ uploadMinimumPace: { bytesPerSecond: 1024, window: "300 millis" } }, (origin) =>
      Effect.gen(function*() {
        const alice = yield* TestHarness.signIn("alice")
        const sent = yield* trickle(origin, alice.key, 10 * 1024 * 1024)
        const answer = yield* Effect.promise(() => sent.answer)
        expect([answer.status, answer.headers["connection"], answer.body.error?.code]).toEqual([
          408,
          "close",
          "invalid_request"
        ])
        expect(answer.body.error?.message).toContain("The upload arrived too slowly")
        // The server closed it: the 10 MiB declared were never waited for.
        yield* Effect.promise(() => sent.closed)
        // The place was given back: an upload is taken.
        expect((yield* upload(origin, alice.key, yield* photo)).status).toBe(201)
      })))
})
