/**
 * The media route of the embeddable handlers: an instance with the built-in nodes mounted
 * under `/api` answers the signed image URLs of its executions at `/api/media/…` over a real
 * socket (Node listener) and as `Request → Response` (web handler), with the bytes' headers, no
 * authentication and no rate limit; forged, expired or unmounted paths answer 404 in the error body.
 */
import { Appexec, MediaUrls } from "@appexec/core"
import { BuiltinNodes, builtinNodes } from "@appexec/nodes"
import { imageNodes } from "@appexec/nodes-image"
import { NodeListener } from "@appexec/platform-node"
import { TestHarness, TestHttpServer } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Logger, Redacted, TestClock } from "effect"
import { readFileSync } from "node:fs"
import sharp from "sharp"
import { WebHandler } from "../src/index.js"
import { SigningKeysTest } from "./fixtures.js"

const poster: unknown = JSON.parse(readFileSync(new URL("../../server/apps/poster.json", import.meta.url), "utf8"))

/** An instance with the built-in nodes and signed media URLs on `baseUrl`, valid 60 s. */
const instance = (baseUrl: string) =>
  Layer.provideMerge(SigningKeysTest, TestHarness.layer({ nodes: [...builtinNodes, ...imageNodes] })).pipe(
    Layer.provideMerge(
      BuiltinNodes.layer({
        mediaUrls: MediaUrls.layer({
          mode: "signed",
          baseUrl,
          secret: Redacted.make("a media secret of at least thirty-two bytes"),
          ttlSeconds: 60
        })
      })
    )
  )

/** Runs the poster app in-process and returns the poster's output. */
const runPoster = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const app = yield* appexec.apps.import(poster, { owner: { public: true } })
  const principal = yield* TestHarness.signIn()
  const started = yield* appexec.executions.start(principal, app.appId, { prompt: "Embedded media" })
  const done = yield* appexec.executions.await(started.executionId)
  return { done, key: principal.key, appId: app.appId, output: done.outputs.find((o) => o.label === "Poster")! }
})

const fetchBytes = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, headers: response.headers, bytes: new Uint8Array(await response.arrayBuffer()) }
  })

const errorCode = (bytes: Uint8Array) =>
  (JSON.parse(new TextDecoder().decode(bytes)) as { error: { code: string } }).error.code

describe("media route", () => {
  it.scoped("the Node listener under /api serves media over the socket, unauthenticated and not rate limited, until they expire", () =>
    Effect.gen(function*() {
      const { origin, server } = yield* TestHttpServer.listening
      yield* Effect.gen(function*() {
        const listener = yield* NodeListener.make({ basePath: "/api", rateLimit: { limit: 2 }, logRequests: false })
        server.on("request", listener)
        const { output, key, done } = yield* runPoster
        expect(done.status).toBe("completed")
        expect(output.type).toBe("image")
        const url = output.value!
        expect(url.startsWith(`${origin}/api/media/executions/${done.executionId}/`)).toBe(true)

        // Over the API too: the stored output is the same URL.
        const polled = yield* Effect.promise(() =>
          fetch(`${origin}/api/v1/executions/${done.executionId}`, { headers: { "x-api-key": key } }).then((r) =>
            r.json()
          )
        )
        expect((polled as { data: { outputs: Array<unknown> } }).data.outputs).toContainEqual(
          expect.objectContaining({ label: "Poster", type: "image", value: url })
        )

        // More downloads than the /v1 limit of 2 allows, with no credentials.
        for (let i = 0; i < 3; i++) expect((yield* fetchBytes(url)).status).toBe(200)
        const image = yield* fetchBytes(url)
        expect(image.status).toBe(200)
        expect(image.headers.get("content-type")).toBe("image/png")
        expect(image.headers.get("content-length")).toBe(String(image.bytes.length))
        expect(image.headers.get("cache-control")).toBe("private, max-age=60, immutable")
        expect(image.headers.get("ratelimit-limit")).toBeNull()
        expect(image.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
        const meta = yield* Effect.promise(() => sharp(image.bytes).metadata())
        expect([meta.width, meta.height, meta.format]).toEqual([512, 512, "png"])
        const head = yield* fetchBytes(url, { method: "HEAD" })
        expect([head.status, head.headers.get("content-length"), head.bytes.length]).toEqual([
          200,
          String(image.bytes.length),
          0
        ])
        const cached = yield* fetchBytes(url, { headers: { "if-none-match": image.headers.get("etag")! } })
        expect(cached.status).toBe(304)
        // /v1 is limited meanwhile: one request above, this is the second, the third is refused.
        expect((yield* fetchBytes(`${origin}/api/v1/apps`, { headers: { "x-api-key": key } })).status).toBe(200)
        expect((yield* fetchBytes(`${origin}/api/v1/apps`, { headers: { "x-api-key": key } })).status).toBe(429)

        const post = yield* fetchBytes(url, { method: "POST" })
        expect([post.status, post.headers.get("allow"), errorCode(post.bytes)]).toEqual([
          405,
          "GET, HEAD",
          "invalid_request"
        ])
        const forged = yield* fetchBytes(url.replace(/sig=[A-Za-z0-9_-]{4}/, "sig=AAAA"))
        expect([forged.status, forged.headers.get("content-type"), errorCode(forged.bytes)]).toEqual([
          404,
          "application/json",
          "not_found"
        ])
        const unmounted = yield* fetchBytes(url.replace("/api/media/", "/media/"))
        expect([unmounted.status, errorCode(unmounted.bytes)]).toEqual([404, "not_found"])

        yield* TestClock.adjust(Duration.seconds(59))
        expect((yield* fetchBytes(url)).status).toBe(200)
        yield* TestClock.adjust(Duration.seconds(2))
        const expired = yield* fetchBytes(url)
        expect([expired.status, expired.headers.get("cache-control"), errorCode(expired.bytes)]).toEqual([
          404,
          "no-store",
          "not_found"
        ])
      }).pipe(Effect.provide(instance(`${origin}/api`)))
    }))

  it.scoped("the web handler under /api serves media as Request → Response; media: false leaves them to the host", () =>
    Effect.gen(function*() {
      const handler = yield* WebHandler.make({ basePath: "/api", logRequests: false })
      const without = yield* WebHandler.make({ basePath: "/api", logRequests: false, media: false })
      const { output } = yield* runPoster
      const url = output.value!
      expect(url.startsWith("https://host.example/api/media/")).toBe(true)
      const response = yield* Effect.promise(() => handler(new Request(url)))
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("image/png")
      const bytes = new Uint8Array(yield* Effect.promise(() => response.arrayBuffer()))
      expect(response.headers.get("content-length")).toBe(String(bytes.length))
      const meta = yield* Effect.promise(() => sharp(bytes).metadata())
      expect([meta.width, meta.height, meta.format]).toEqual([512, 512, "png"])
      const off = yield* Effect.promise(() => without(new Request(url)))
      expect(off.status).toBe(404)
      expect(yield* Effect.promise(() => off.json())).toMatchObject({
        error: { code: "not_found", message: expect.stringMatching(/^No endpoint GET \/media\//) }
      })
    }).pipe(Effect.provide(instance("https://host.example/api"))))

  it.scoped("warns when the media URLs do not point under the mount path", () =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ logLevel, message }) => {
          if (logLevel._tag === "Warning") warnings.push(String(message))
        })
      )
      yield* WebHandler.make({ basePath: "/api", logRequests: false }).pipe(Effect.provide(capture))
      expect(warnings).toEqual([expect.stringContaining("base URL that ends with the mount path '/api'")])
      warnings.length = 0
      yield* WebHandler.make({ logRequests: false }).pipe(Effect.provide(capture))
      expect(warnings).toEqual([])
    }).pipe(Effect.provide(instance("https://host.example"))))
})
