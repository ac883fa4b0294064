import { BlobStore, MediaUrls } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, Option, Redacted, TestClock } from "effect"
import { Exchange, MediaRoute } from "../src/index.js"

const bytes = new TextEncoder().encode("0123456789 media bytes")
const KEY = "executions/abc/1f2e-poster.png"

/** The keys `get` was asked for, in order (the store has neither `stat` nor `getRange`). */
const gets: Array<string> = []

const blobs = Layer.succeed(BlobStore.BlobStore, {
  put: () => Effect.void,
  get: (key) =>
    Effect.sync(() => {
      gets.push(key)
      return key === KEY || key === "other.png" ? Option.some({ contentType: "image/png", bytes }) : Option.none()
    }),
  deleteUnder: () => Effect.void
})

const signed = (ttlSeconds = 3600) =>
  Layer.merge(
    MediaUrls.layer({
      mode: "signed",
      baseUrl: "https://api.example.com/appexec/",
      secret: Redacted.make("0123456789abcdef0123456789abcdef"),
      ttlSeconds
    }),
    blobs
  )

/** The route's answer as plain data: status, lower-case headers and the body (none when empty). */
const get = (url: string, headers: Record<string, string> = {}, method = "GET") =>
  Effect.gen(function*() {
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))
    const response = yield* MediaRoute.answer({ method, url, headers: lower, requestId: "test" })
    if (Exchange.isStreamed(response.body)) return yield* Effect.dieMessage("the media route streams no answer")
    const body = typeof response.body === "string" ? new TextEncoder().encode(response.body) : response.body
    return {
      status: response.status,
      headers: response.headers,
      body: body === undefined || body.length === 0 ? undefined : body
    }
  })

const urlFor = (key: string) => Effect.flatMap(MediaUrls.MediaUrls, (urls) => urls.urlFor(key))

describe("MediaUrls (signed)", () => {
  it.effect("a fresh URL serves the blob with its type, length, validator and a cache lifetime that ends with the URL", () =>
    Effect.gen(function*() {
      yield* TestClock.adjust(Duration.seconds(1_000))
      const url = yield* urlFor(KEY)
      expect(url).toBe(
        `https://api.example.com/appexec/media/${KEY}?exp=4600&sig=${new URL(url).searchParams.get("sig")}`
      )
      yield* TestClock.adjust(Duration.seconds(600))
      const answer = yield* get(url)
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual(bytes)
      expect(answer.headers).toMatchObject({
        "content-type": "image/png",
        "content-length": String(bytes.length),
        "cache-control": "private, max-age=3000, immutable",
        "x-content-type-options": "nosniff"
      })
      expect(answer.headers["etag"]).toMatch(/^"[\w-]{27}"$/)
    }).pipe(Effect.provide(signed())))

  it.effect("HEAD has the headers and no body; If-None-Match answers 304; a byte range answers 206", () =>
    Effect.gen(function*() {
      const url = yield* urlFor(KEY)
      const head = yield* get(url, {}, "HEAD")
      expect(head.status).toBe(200)
      expect(head.body).toBeUndefined()
      expect(head.headers["content-length"]).toBe(String(bytes.length))
      const again = yield* get(url, { "If-None-Match": head.headers["etag"]! })
      expect(again.status).toBe(304)
      expect(again.body).toBeUndefined()
      gets.length = 0
      const range = yield* get(url, { range: "bytes=2-5" })
      expect(range.status).toBe(206)
      expect(new TextDecoder().decode(range.body)).toBe("2345")
      expect(range.headers["content-range"]).toBe(`bytes 2-5/${bytes.length}`)
      // A store without `stat` or `getRange` is read once per answer: headers and bytes from one read.
      expect(gets).toEqual([KEY])
      expect((yield* get(url)).body).toEqual(bytes)
      expect(gets).toEqual([KEY, KEY])
      expect((yield* get(url, { range: "bytes=999-" })).status).toBe(416)
      expect((yield* get(url, {}, "POST")).status).toBe(405)
    }).pipe(Effect.provide(signed())))

  it.effect("If-None-Match compares weakly and If-Range strongly, as RFC 9110 says", () =>
    Effect.gen(function*() {
      const url = yield* urlFor(KEY)
      const etag = (yield* get(url, {}, "HEAD")).headers["etag"]!
      // If-None-Match: W/"x" names the same representation as "x", in a list or alone; * too.
      for (const ifNoneMatch of [`W/${etag}`, `"other", W/${etag}`, `"other",${etag}`, "*"]) {
        expect({ ifNoneMatch, status: (yield* get(url, { "if-none-match": ifNoneMatch })).status }).toEqual({
          ifNoneMatch,
          status: 304
        })
      }
      for (const ifNoneMatch of [`"other"`, `W/"other"`, etag.slice(1, -1)]) {
        expect({ ifNoneMatch, status: (yield* get(url, { "if-none-match": ifNoneMatch })).status }).toEqual({
          ifNoneMatch,
          status: 200
        })
      }
      // If-Range: the current tag serves the range; a weak tag, another tag or a date the whole.
      const ranged = yield* get(url, { range: "bytes=2-5", "if-range": etag })
      expect([ranged.status, new TextDecoder().decode(ranged.body)]).toEqual([206, "2345"])
      for (const ifRange of [`W/${etag}`, `"other"`, "Tue, 01 Jan 2030 00:00:00 GMT"]) {
        const whole = yield* get(url, { range: "bytes=2-5", "if-range": ifRange })
        expect({ ifRange, status: whole.status, range: whole.headers["content-range"] }).toEqual({
          ifRange,
          status: 200,
          range: undefined
        })
        expect(whole.body).toEqual(bytes)
      }
    }).pipe(Effect.provide(signed())))

  it.effect("with a store that reads ranges, a range reads only its bytes, HEAD and 304 read none, and the ETag follows the version", () => {
    const video = Uint8Array.from({ length: 256 * 1024 }, (_, i) => i % 251)
    const reads: Array<string> = []
    let version = "v1"
    const ranged = Layer.succeed(BlobStore.BlobStore, {
      put: () => Effect.void,
      get: (key) =>
        Effect.sync(() => reads.push(`get ${key}`)).pipe(
          Effect.as(Option.some({ contentType: "video/mp4", bytes: video }))
        ),
      stat: (key) =>
        Effect.sync(() => reads.push(`stat ${key}`)).pipe(
          Effect.as(Option.some({ contentType: "video/mp4", size: video.length, version }))
        ),
      getRange: (key, start, end) =>
        Effect.sync(() => reads.push(`range ${key} ${start}-${end}`)).pipe(
          Effect.as(Option.some(video.slice(start, end + 1)))
        ),
      deleteUnder: () => Effect.void
    })
    return Effect.gen(function*() {
      const url = yield* urlFor("executions/abc/clip.mp4")
      const part = yield* get(url, { range: "bytes=65536-131071" })
      expect(part.status).toBe(206)
      expect(part.headers["content-range"]).toBe(`bytes 65536-131071/${video.length}`)
      expect(part.headers["content-length"]).toBe("65536")
      expect(part.body).toEqual(video.slice(65536, 131072))
      expect(reads).toEqual(["stat executions/abc/clip.mp4", "range executions/abc/clip.mp4 65536-131071"])
      const tail = yield* get(url, { range: "bytes=-10" })
      expect(tail.body).toEqual(video.slice(-10))
      expect(tail.headers["etag"]).toBe(part.headers["etag"])
      reads.length = 0
      const head = yield* get(url, {}, "HEAD")
      expect(head.headers["content-length"]).toBe(String(video.length))
      expect((yield* get(url, { "if-none-match": part.headers["etag"]!, range: "bytes=0-1" })).status).toBe(304)
      expect(reads).toEqual(["stat executions/abc/clip.mp4", "stat executions/abc/clip.mp4"])
      expect((yield* get(url)).body).toEqual(video)
      version = "v2"
      const replaced = yield* get(url, { "if-none-match": part.headers["etag"]! })
      expect(replaced.status).toBe(200)
      expect(replaced.headers["etag"]).not.toBe(part.headers["etag"])
    }).pipe(Effect.provide(Layer.merge(
      MediaUrls.layer({
        mode: "signed",
        baseUrl: "https://api.example.com/appexec/",
        secret: Redacted.make("0123456789abcdef0123456789abcdef"),
        ttlSeconds: 3600
      }),
      ranged
    )))
  })

  it.effect("an expired URL answers 404", () =>
    Effect.gen(function*() {
      const url = yield* urlFor(KEY)
      yield* TestClock.adjust(Duration.seconds(3600))
      expect((yield* get(url)).status).toBe(200)
      yield* TestClock.adjust(Duration.seconds(1))
      const expired = yield* get(url)
      expect(expired.status).toBe(404)
      expect(expired.headers["cache-control"]).toBe("no-store")
    }).pipe(Effect.provide(signed())))

  it.effect("a forged or altered URL answers 404", () =>
    Effect.gen(function*() {
      const url = new URL(yield* urlFor(KEY))
      const sig = url.searchParams.get("sig")!
      const exp = url.searchParams.get("exp")!
      const variants = [
        `https://api.example.com/appexec/media/${KEY}?exp=${exp}&sig=${sig.slice(0, -2)}AA`,
        `https://api.example.com/appexec/media/${KEY}?exp=${Number(exp) + 1}&sig=${sig}`,
        `https://api.example.com/appexec/media/other.png?exp=${exp}&sig=${sig}`,
        `https://api.example.com/appexec/media/${KEY}?exp=${exp}`,
        `https://api.example.com/appexec/media/${KEY}`,
        `https://api.example.com/appexec/v1/apps?exp=${exp}&sig=${sig}`,
        "not a url"
      ]
      for (const variant of variants) expect((yield* get(variant)).status, variant).toBe(404)
      // The host may hand over the path with or without its mount prefix.
      expect((yield* get(`http://internal:8080/media/${KEY}${url.search}`)).status).toBe(200)
    }).pipe(Effect.provide(signed())))

  it.effect("a URL of a blob that does not exist answers 404", () =>
    Effect.gen(function*() {
      expect((yield* get(yield* urlFor("missing/blob.png"))).status).toBe(404)
    }).pipe(Effect.provide(signed())))

  it.effect("keys that could escape or need escaping are refused", () =>
    Effect.gen(function*() {
      for (const key of ["../etc/passwd", "a//b", "/abs", "a b", "a/../b", ".hidden", ""]) {
        expect(MediaUrls.isBlobKey(key), key).toBe(false)
        expect(Exit.isFailure(yield* Effect.exit(urlFor(key))), key).toBe(true)
      }
      expect(MediaUrls.isBlobKey(KEY)).toBe(true)
    }).pipe(Effect.provide(signed())))

  it.effect("a secret shorter than 32 bytes is refused", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        Layer.build(MediaUrls.layer({ mode: "signed", baseUrl: "http://x", secret: Redacted.make("short") })).pipe(
          Effect.scoped
        )
      )
      expect(Exit.isFailure(exit)).toBe(true)
    }))
})

describe("MediaUrls (public)", () => {
  const publicUrls = Layer.merge(MediaUrls.layer({ mode: "public", baseUrl: "https://cdn.example.com/media/" }), blobs)

  it.effect("URLs are the public base URL and the key; the instance serves nothing", () =>
    Effect.gen(function*() {
      const url = yield* urlFor(KEY)
      expect(url).toBe(`https://cdn.example.com/media/${KEY}`)
      expect((yield* get(url)).status).toBe(404)
    }).pipe(Effect.provide(publicUrls)))
})
