/**
 * `MediaResolver.resolve`: a signed media URL of this instance is read from the blob store; one
 * that is expired (moved past with `TestClock`), altered or names deleted media is refused; any
 * other URL — another origin, another path, public mode — falls through (none) without touching
 * the store.
 */
import { BlobStore, MediaResolver, MediaUrls } from "@appexec/core"
import { MemoryBlobStore } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Option, Redacted, TestClock } from "effect"

const KEY = "executions/0b7c6f1e-3a34-4c6e-9a51-2f1d3b8e0c11/3f2a-poster.png"
const png = { contentType: "image/png", bytes: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]) }

const signed = (baseUrl: string) =>
  MediaUrls.layer({
    mode: "signed",
    baseUrl,
    secret: Redacted.make("0123456789abcdef0123456789abcdef"),
    ttlSeconds: 3600
  })

/** The instance's media URLs over a blob store that holds `png` under `KEY`. */
const instance = (urls: Layer.Layer<MediaUrls.MediaUrls, unknown>) =>
  Layer.effectDiscard(Effect.flatMap(BlobStore.BlobStore, (blobs) => blobs.put(KEY, png))).pipe(
    Layer.provideMerge(Layer.merge(Layer.orDie(urls), MemoryBlobStore.layer))
  )

const urlFor = (key: string) => Effect.flatMap(MediaUrls.MediaUrls, (urls) => urls.urlFor(key))

const refusal = (url: string) =>
  MediaResolver.resolve(url).pipe(
    Effect.either,
    Effect.map((result) => (Either.isLeft(result) && result.left._tag === "OwnMediaRefused" ? result.left : undefined))
  )

describe("MediaResolver", () => {
  it.effect("reads a valid signed media URL of this instance from the blob store", () =>
    Effect.gen(function*() {
      const url = yield* urlFor(KEY)
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/media\/executions\/.+\?exp=\d+&sig=/)
      expect(yield* MediaResolver.resolve(url)).toEqual(Option.some(png))
    }).pipe(Effect.provide(instance(signed("http://127.0.0.1:8080")))))

  it.effect("under a base path, only URLs under that path and origin are the instance's", () =>
    Effect.gen(function*() {
      const url = yield* urlFor(KEY)
      expect(url.startsWith("https://api.example.com/appexec/media/")).toBe(true)
      expect(yield* MediaResolver.resolve(url)).toEqual(Option.some(png))
      const parsed = new URL(url)
      // The same signed path and query on another origin, or outside the base path, is someone else's URL.
      for (
        const other of [
          `https://other.example.com${parsed.pathname}${parsed.search}`,
          `http://api.example.com${parsed.pathname}${parsed.search}`,
          `https://api.example.com:8443${parsed.pathname}${parsed.search}`,
          `https://api.example.com${parsed.pathname.slice("/appexec".length)}${parsed.search}`
        ]
      ) {
        expect(yield* MediaResolver.resolve(other)).toEqual(Option.none())
      }
    }).pipe(Effect.provide(instance(signed("https://api.example.com/appexec/")))))

  it.effect("a tampered signature, expiry or key is refused as altered, and never read", () =>
    Effect.gen(function*() {
      const url = new URL(yield* urlFor(KEY))
      const sig = url.searchParams.get("sig")!
      const exp = Number(url.searchParams.get("exp"))
      const flipped = `${sig[0] === "A" ? "B" : "A"}${sig.slice(1)}`
      const tampered = [
        `${url.origin}${url.pathname}?exp=${exp}&sig=${flipped}`,
        `${url.origin}${url.pathname}?exp=${exp + 1}&sig=${sig}`,
        `${url.origin}${url.pathname}?exp=${exp}`,
        `${url.origin}${url.pathname.replace("poster", "render")}?exp=${exp}&sig=${sig}`,
        `${url.origin}/media/executions%2F..%2Fsecret?exp=${exp}&sig=${sig}`
      ]
      for (const altered of tampered) {
        const refused = yield* refusal(altered)
        expect(refused?.reason, altered).toBe("forged")
        expect(refused?.message).toBe(
          "this instance's media link is altered or not signed by it (copy the whole link, with its exp and sig)"
        )
      }
      // Dot segments are resolved by the URL parser: this path is not under /media/ at all.
      expect(yield* MediaResolver.resolve(`${url.origin}/media/../etc/passwd?exp=${exp}&sig=${sig}`)).toEqual(
        Option.none()
      )
    }).pipe(Effect.provide(instance(signed("http://127.0.0.1:8080")))))

  it.effect("an expired URL is refused as expired, the second after its expiry and not before", () =>
    Effect.gen(function*() {
      const url = yield* urlFor(KEY)
      yield* TestClock.adjust("3600 seconds")
      expect(yield* MediaResolver.resolve(url)).toEqual(Option.some(png))
      yield* TestClock.adjust("1 second")
      const refused = yield* refusal(url)
      expect(refused?.reason).toBe("expired")
      expect(refused?.message).toBe(
        "this instance's media link has expired (media links are valid for a limited time)"
      )
    }).pipe(Effect.provide(instance(signed("http://127.0.0.1:8080")))))

  it.effect("a valid URL whose media were deleted is refused as missing", () =>
    Effect.gen(function*() {
      const url = yield* urlFor(KEY)
      yield* Effect.flatMap(BlobStore.BlobStore, (blobs) => blobs.deleteUnder("executions/"))
      expect((yield* refusal(url))?.reason).toBe("missing")
    }).pipe(Effect.provide(instance(signed("http://127.0.0.1:8080")))))

  it.effect("foreign URLs fall through without a refusal", () =>
    Effect.gen(function*() {
      for (
        const foreign of [
          "https://images.example.com/cat.png",
          "https://images.example.com/media/executions/x/cat.png?exp=1&sig=AAAA",
          "http://127.0.0.1:8081/media/executions/x/cat.png?exp=1&sig=AAAA",
          "http://127.0.0.1:8080/v1/apps",
          "not a URL"
        ]
      ) {
        expect(yield* MediaResolver.resolve(foreign), foreign).toEqual(Option.none())
      }
    }).pipe(Effect.provide(instance(signed("http://127.0.0.1:8080")))))

  it.effect("in public mode no URL is the instance's: its media URLs are fetched like any other", () =>
    Effect.gen(function*() {
      const url = yield* urlFor(KEY)
      expect(url).toBe(`https://cdn.example.com/appexec/${KEY}`)
      expect(yield* MediaResolver.resolve(url)).toEqual(Option.none())
    }).pipe(Effect.provide(instance(MediaUrls.layer({ mode: "public", baseUrl: "https://cdn.example.com/appexec/" })))))
})
