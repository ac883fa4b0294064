/**
 * `POST /v1/uploads` over a real socket (docs/api.md#uploads): an instance with the built-in nodes
 * and signed media URLs behind the Node listener on 127.0.0.1, port 0. An uploaded PNG feeds the
 * Thumbnail app and the thumbnail decodes; its URL answers ranges and HEAD as a video player
 * needs; bodies past the bound are 413 (declared or streamed), a type the bytes do not have 415,
 * no key 401; another workspace may use the URL (a capability) but finds no way to list or reach
 * uploads otherwise; uploads count against the rate limit. (Retention of uploads: core's
 * `Uploads.test.ts`.)
 */
import { Appexec, MediaUrls } from "@appexec/core"
import { BuiltinNodes, builtinNodes } from "@appexec/nodes"
import { imageNodes } from "@appexec/nodes-image"
import { NodeListener } from "@appexec/platform-node"
import { TestHarness, TestHttpServer } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Redacted } from "effect"
import { readFileSync } from "node:fs"
import sharp from "sharp"
import { type AppexecHttp, WebHandler } from "../src/index.js"
import * as Endpoints from "../src/internal/Endpoints.js"
import type { ServerRequest } from "../src/internal/Exchange.js"
import { SigningKeysTest } from "./fixtures.js"

const thumbnail: unknown = JSON.parse(
  readFileSync(new URL("../../server/apps/thumbnail.json", import.meta.url), "utf8")
)

/** An instance with the built-in nodes and signed media URLs on `baseUrl`, valid one hour. */
const instance = (baseUrl: string) =>
  Layer.provideMerge(SigningKeysTest, TestHarness.layer({ nodes: [...builtinNodes, ...imageNodes] })).pipe(
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
const served = <A, E, R>(
  options: AppexecHttp.Options,
  test: (origin: string) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const { origin, server } = yield* TestHttpServer.listening
    return yield* Effect.gen(function*() {
      server.on("request", yield* NodeListener.make({ logRequests: false, ...options }))
      return yield* test(origin)
    }).pipe(Effect.provide(instance(origin)))
  })

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly bytes: Uint8Array
}

const send = (url: string, init: RequestInit = {}) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(url, init)
    return { status: response.status, headers: response.headers, bytes: new Uint8Array(await response.arrayBuffer()) }
  })

const jsonOf = (answer: Answer) => JSON.parse(new TextDecoder().decode(answer.bytes)) as Record<string, any>

/** `POST /v1/uploads` with `bytes` as `contentType` and the key, when given. */
const upload = (origin: string, bytes: Uint8Array | ReadableStream<Uint8Array>, contentType?: string, key?: string) =>
  send(`${origin}/v1/uploads`, {
    method: "POST",
    body: bytes,
    headers: {
      ...(contentType === undefined ? {} : { "content-type": contentType }),
      ...(key === undefined ? {} : { "x-api-key": key })
    },
    ...(bytes instanceof Uint8Array ? {} : { duplex: "half" })
  } as RequestInit)

const png = (width: number, height: number) =>
  Effect.promise(() =>
    sharp({ create: { width, height, channels: 3, background: { r: 200, g: 80, b: 40 } } }).png().toBuffer().then((b) =>
      Uint8Array.from(b)
    )
  )

const jpeg = Effect.promise(() =>
  sharp({ create: { width: 32, height: 32, channels: 3, background: "#336699" } }).jpeg().toBuffer().then((b) =>
    new Uint8Array(b)
  )
)

/** Runs the Thumbnail app with `image` for `principal` in-process until it ends. */
const runThumbnail = (principal: Appexec.Principal, appId: string, image: string) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const started = yield* appexec.executions.start(principal, appId, { image })
    return yield* appexec.executions.await(started.executionId)
  })

describe("POST /v1/uploads", () => {
  it.scoped("an uploaded PNG feeds Thumbnail; its URL answers GET, HEAD and ranges with its type", () =>
    served({}, (origin) =>
      Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const app = yield* appexec.apps.import(thumbnail, { owner: { public: true } })
        const alice = yield* TestHarness.signIn("alice")
        const photo = yield* png(640, 480)

        const answer = yield* upload(origin, photo, "image/png", alice.key)
        expect(answer.status).toBe(201)
        expect(answer.headers.get("ratelimit-limit")).toBe("100")
        const { data } = jsonOf(answer)
        expect(data).toEqual({
          url: expect.stringMatching(
            new RegExp(
              `^${origin}/media/uploads/\\d{4}-\\d{2}-\\d{2}/${alice.workspaceId}/[0-9a-f-]{36}\\?exp=\\d+&sig=`
            )
          ),
          contentType: "image/png",
          bytes: photo.length,
          // The URL's expiry: an hour from the (virtual) start.
          expiresAt: new Date(3600 * 1000).toISOString()
        })

        const done = yield* runThumbnail(alice, app.appId, data.url)
        expect(done.status, done.errorMessage ?? "").toBe("completed")
        const output = done.outputs.find((o) => o.label === "Thumbnail")!
        const image = yield* send(output.value!)
        expect(image.status).toBe(200)
        const meta = yield* Effect.promise(() => sharp(image.bytes).metadata())
        expect([meta.format, meta.width, meta.height]).toEqual(["webp", 256, 256])

        // The upload itself, as a browser or a video player reads it.
        const whole = yield* send(data.url)
        expect([whole.status, whole.headers.get("content-type"), whole.headers.get("accept-ranges")]).toEqual([
          200,
          "image/png",
          "bytes"
        ])
        expect(whole.bytes).toEqual(photo)
        const head = yield* send(data.url, { method: "HEAD" })
        expect([
          head.status,
          head.headers.get("content-type"),
          head.headers.get("content-length"),
          head.headers.get("accept-ranges"),
          head.bytes.length
        ]).toEqual([200, "image/png", String(photo.length), "bytes", 0])
        const range = yield* send(data.url, { headers: { range: "bytes=8-15" } })
        expect([
          range.status,
          range.headers.get("content-type"),
          range.headers.get("content-length"),
          range.headers.get("content-range"),
          range.headers.get("accept-ranges")
        ]).toEqual([206, "image/png", "8", `bytes 8-15/${photo.length}`, "bytes"])
        expect(range.bytes).toEqual(photo.subarray(8, 16))
        const tail = yield* send(data.url, { headers: { range: "bytes=-4" } })
        expect([tail.status, tail.headers.get("content-range")]).toEqual([
          206,
          `bytes ${photo.length - 4}-${photo.length - 1}/${photo.length}`
        ])
        expect(tail.bytes).toEqual(photo.subarray(photo.length - 4))
        const headRange = yield* send(data.url, { method: "HEAD", headers: { range: "bytes=0-99" } })
        expect([headRange.status, headRange.headers.get("content-length"), headRange.bytes.length]).toEqual([
          206,
          "100",
          0
        ])
        const beyond = yield* send(data.url, { headers: { range: `bytes=${photo.length}-` } })
        expect([beyond.status, beyond.headers.get("content-range"), jsonOf(beyond).error.code]).toEqual([
          416,
          `bytes */${photo.length}`,
          "invalid_request"
        ])
      })))

  it.scoped("a body past --max-upload is 413, declared or streamed, and the connection is not reused", () =>
    served({ maxUploadBytes: 1024 }, (origin) =>
      Effect.gen(function*() {
        const alice = yield* TestHarness.signIn("alice")
        const big = yield* png(400, 400)
        expect(big.length).toBeGreaterThan(2048)
        const declared = yield* upload(origin, big, "image/png", alice.key)
        expect([declared.status, declared.headers.get("connection"), jsonOf(declared).error]).toEqual([
          413,
          "close",
          {
            code: "payload_too_large",
            message: "The upload is larger than 1024 bytes, the most this instance accepts."
          }
        ])
        // No Content-Length: refused once the bytes read pass the bound.
        const chunks = [big.subarray(0, 800), big.subarray(800, 1600), big.subarray(1600)]
        const stream = new ReadableStream<Uint8Array>({
          pull: (controller) => {
            const next = chunks.shift()
            if (next === undefined) controller.close()
            else controller.enqueue(next)
          }
        })
        const streamed = yield* upload(origin, stream, "image/png", alice.key)
        expect([streamed.status, jsonOf(streamed).error.code]).toEqual([413, "payload_too_large"])
        // Within the bound it is stored.
        const small = yield* png(8, 8)
        expect((yield* upload(origin, small, "image/png", alice.key)).status).toBe(201)
      })))

  it.scoped("a type the bytes do not have, an unaccepted or missing type are 415; an empty body 400; no key 401", () =>
    served({}, (origin) =>
      Effect.gen(function*() {
        const alice = yield* TestHarness.signIn("alice")
        const photo = yield* png(16, 16)
        const mismatch = yield* upload(origin, yield* jpeg, "image/png", alice.key)
        expect([mismatch.status, mismatch.headers.get("content-type")]).toEqual([415, "application/json"])
        expect(jsonOf(mismatch).error).toEqual({
          code: "unsupported_media_type",
          message: "The bytes are image/jpeg, not image/png as Content-Type says: send the file's own type.",
          details: [{ declared: "image/png", actual: "image/jpeg" }]
        })
        const text = yield* upload(origin, new TextEncoder().encode("hello"), "text/plain", alice.key)
        expect([text.status, jsonOf(text).error.code]).toEqual([415, "unsupported_media_type"])
        expect(jsonOf(text).error.message).toContain("Uploads of 'text/plain' are not accepted")
        const notVideo = yield* upload(origin, new TextEncoder().encode("not a video at all"), "video/mp4", alice.key)
        expect([notVideo.status, jsonOf(notVideo).error.message]).toEqual([
          415,
          expect.stringContaining("The bytes are not video/mp4 as Content-Type says, nor any format")
        ])
        const notImage = yield* upload(origin, new TextEncoder().encode("<html>hello</html>"), "image/png", alice.key)
        expect([notImage.status, jsonOf(notImage).error.message]).toEqual([
          415,
          expect.stringMatching(/^The bytes are not image\/png as Content-Type says, nor any format an upload may be: /)
        ])
        const untyped = yield* upload(origin, photo, "application/octet-stream", alice.key)
        expect([untyped.status, jsonOf(untyped).error.message]).toEqual([
          415,
          expect.stringContaining("Send the file's type as Content-Type, one of: image/png, image/jpeg")
        ])
        // Aliases and parameters of the type are understood.
        const aliased = yield* upload(origin, yield* jpeg, "Image/JPG; charset=binary", alice.key)
        expect([aliased.status, jsonOf(aliased).data.contentType]).toEqual([201, "image/jpeg"])
        const empty = yield* upload(origin, new Uint8Array(0), "image/png", alice.key)
        expect([empty.status, jsonOf(empty).error.code]).toEqual([400, "invalid_request"])
        const anonymous = yield* upload(origin, photo, "image/png")
        expect([anonymous.status, anonymous.headers.get("www-authenticate"), jsonOf(anonymous).error.code]).toEqual([
          401,
          "Bearer realm=\"appexec\"",
          "unauthorized"
        ])
        const bearer = yield* send(`${origin}/v1/uploads`, {
          method: "POST",
          body: photo,
          headers: { "content-type": "image/png", authorization: `Bearer ${alice.key}` }
        })
        expect(bearer.status).toBe(201)
      })))

  it.scoped("another workspace may use an upload's URL (a capability), but cannot list uploads or reach one by its key", () =>
    served({}, (origin) =>
      Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const app = yield* appexec.apps.import(thumbnail, { owner: { public: true } })
        const alice = yield* TestHarness.signIn("alice")
        const bob = yield* TestHarness.signIn("bob")
        const { data } = jsonOf(yield* upload(origin, yield* png(64, 64), "image/png", alice.key))

        const shared = yield* runThumbnail(bob, app.appId, data.url)
        expect(shared.status, shared.errorMessage ?? "").toBe("completed")

        // No route lists uploads or reads one by id.
        const list = yield* send(`${origin}/v1/uploads`, { headers: { "x-api-key": bob.key } })
        expect([list.status, list.headers.get("allow")]).toEqual([405, "POST"])
        const byId = yield* send(`${origin}/v1/uploads/${data.url.split("/").at(-1).split("?")[0]}`, {
          headers: { "x-api-key": bob.key }
        })
        expect([byId.status, jsonOf(byId).error.code]).toEqual([404, "not_found"])
        // The key with bob's workspace, or without its signature, reads nothing.
        const moved = data.url.replace(alice.workspaceId, bob.workspaceId)
        expect((yield* send(moved)).status).toBe(404)
        expect((yield* send(data.url.replace(/\?.*$/, ""))).status).toBe(404)
        const refused = yield* runThumbnail(bob, app.appId, moved)
        expect(refused.status).toBe("failed")
        expect(refused.errorMessage).toContain("altered or not signed")
      })))

  it.scoped("uploads count against the rate limit", () =>
    served({ rateLimit: { limit: 2 } }, (origin) =>
      Effect.gen(function*() {
        const alice = yield* TestHarness.signIn("alice")
        const photo = yield* png(8, 8)
        const first = yield* upload(origin, photo, "image/png", alice.key)
        expect([first.status, first.headers.get("ratelimit-remaining")]).toEqual([201, "1"])
        expect((yield* upload(origin, photo, "image/png", alice.key)).status).toBe(201)
        const third = yield* upload(origin, photo, "image/png", alice.key)
        expect([third.status, jsonOf(third).error.code, third.headers.get("retry-after")]).toEqual([
          429,
          "rate_limited",
          expect.stringMatching(/^\d+$/)
        ])
        // Every other /v1 request shares the same window.
        const other = yield* send(`${origin}/v1/apps`, { headers: { "x-api-key": alice.key } })
        expect(other.status).toBe(429)
      })))

  it.scoped("past uploadsAtOnce bodies being read, one more is 429 at once, before its body is read", () =>
    Effect.gen(function*() {
      const endpoints = yield* Endpoints.make({ uploadsAtOnce: 1 })
      const uploadFile = endpoints.find((e) => e.name === "uploadFile")!
      const alice = yield* TestHarness.signIn("alice")
      const photo = yield* png(8, 8)
      const arrived = yield* Deferred.make<Uint8Array>()
      let secondRead = false
      const request = (body: ServerRequest["body"]): ServerRequest => ({
        method: "POST",
        url: "/v1/uploads",
        headers: { "content-type": "image/png" },
        remoteAddress: "127.0.0.1",
        body
      })
      const call = (body: ServerRequest["body"]) =>
        uploadFile.run({ params: {}, query: {}, principal: alice, request: request(body), requestId: "test" })

      // The first upload's body is still arriving: it holds the only slot.
      const first = yield* Effect.fork(call(() => Deferred.await(arrived)))
      yield* Effect.yieldNow()
      const refused = yield* Effect.flip(call(() => Effect.sync(() => (secondRead = true, photo))))
      expect(refused._tag).toBe("Refused")
      const response = refused._tag === "Refused" ? refused.response : undefined
      expect([response?.status, response?.headers["retry-after"], secondRead]).toEqual([429, "1", false])
      expect(JSON.parse(String(response?.body))).toEqual({
        error: {
          code: "rate_limited",
          message: "This server is receiving 1 upload at once, the most it takes; retry after 1 s."
        }
      })

      // Once the first is stored, the slot is free again.
      yield* Deferred.succeed(arrived, photo)
      expect((yield* Fiber.join(first)).status).toBe(201)
      expect((yield* call(() => Effect.succeed(photo))).status).toBe(201)
    }).pipe(Effect.provide(instance("http://127.0.0.1:1"))))

  it.scoped("the web handler takes uploads too (Request → Response), mounted under a base path", () =>
    Effect.gen(function*() {
      const handler = yield* WebHandler.make({ basePath: "/api", logRequests: false, maxUploadBytes: 1024 })
      const alice = yield* TestHarness.signIn("alice")
      const photo = yield* png(8, 8)
      const post = (body: Uint8Array<ArrayBuffer>, type: string) =>
        Effect.promise(() =>
          handler(
            new Request("https://host.example/api/v1/uploads", {
              method: "POST",
              headers: { "x-api-key": alice.key, "content-type": type },
              body
            })
          )
        )
      const created = yield* post(photo, "image/png")
      expect(created.status).toBe(201)
      const { data } = (yield* Effect.promise(() => created.json())) as { data: { url: string } }
      expect(data.url.startsWith("https://host.example/api/media/uploads/")).toBe(true)
      const media = yield* Effect.promise(() => handler(new Request(data.url)))
      expect([media.status, media.headers.get("content-type")]).toEqual([200, "image/png"])
      expect(new Uint8Array(yield* Effect.promise(() => media.arrayBuffer()))).toEqual(photo)
      expect((yield* post(yield* png(300, 300), "image/png")).status).toBe(413)
      expect((yield* post(photo, "image/gif")).status).toBe(415)
    }).pipe(Effect.provide(instance("https://host.example/api"))))
})
