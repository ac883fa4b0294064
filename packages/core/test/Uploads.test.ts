/**
 * Uploads in core (docs/api.md#uploads): the media types told from the bytes (`MediaType`), the
 * facade's `uploads.create` (checked against the declared type, stored under the workspace's key,
 * a signed URL that the instance's own-media path reads back), and retention in virtual time:
 * an upload is kept while its URL works and deleted by the day it expired, on demand and by the
 * periodic pass.
 */
import { Appexec, BlobStore, MediaResolver, MediaType, MediaUrls } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Option, Redacted, TestClock } from "effect"

const ascii = (text: string) => Array.from(text, (c) => c.charCodeAt(0))
const bytes = (...parts: ReadonlyArray<ReadonlyArray<number>>) => Uint8Array.from(parts.flat())
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]
const ftyp = (major: string, ...compatible: ReadonlyArray<string>) =>
  bytes(u32(16 + 4 * compatible.length), ascii("ftyp"), ascii(major), [0, 0, 2, 0], ...compatible.map(ascii))

/** The first bytes of a file of each supported format. */
const samples: ReadonlyArray<readonly [string, Uint8Array]> = [
  ["image/png", bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], [0, 0, 0, 13])],
  ["image/jpeg", bytes([0xff, 0xd8, 0xff, 0xe0, 0, 16], ascii("JFIF"))],
  ["image/gif", bytes(ascii("GIF89a"), [1, 0, 1, 0])],
  ["image/webp", bytes(ascii("RIFF"), [36, 0, 0, 0], ascii("WEBPVP8 "))],
  ["image/avif", ftyp("avif", "mif1", "miaf")],
  ["video/mp4", ftyp("isom", "iso2", "avc1", "mp41")],
  ["video/quicktime", ftyp("qt  ")],
  ["video/webm", bytes([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x84], ascii("webm"))],
  ["audio/mpeg", bytes(ascii("ID3"), [4, 0, 0, 0, 0, 0, 0])],
  ["audio/wav", bytes(ascii("RIFF"), [36, 0, 0, 0], ascii("WAVEfmt "))],
  ["audio/ogg", bytes(ascii("OggS"), [0, 2])],
  ["audio/mp4", ftyp("M4A ", "isom")]
]

describe("MediaType", () => {
  it("tells each supported format from its first bytes", () => {
    for (const [type, sample] of samples) {
      expect(Option.map(MediaType.sniff(sample), (s) => s.contentType), type).toEqual(Option.some(type))
    }
    // An MPEG audio frame with no ID3 tag: sync, MPEG-1 layer III, 128 kbit/s.
    expect(Option.map(MediaType.sniff(bytes([0xff, 0xfb, 0x90, 0x64])), (s) => s.kind)).toEqual(Option.some("audio"))
  })

  it("tells nothing of text, of a Matroska file that is not WebM, of a HEIF still, or of too few bytes", () => {
    expect(MediaType.sniff(bytes(ascii("<svg xmlns=")))).toEqual(Option.none())
    expect(MediaType.sniff(bytes([0x1a, 0x45, 0xdf, 0xa3], ascii("matroska")))).toEqual(Option.none())
    expect(MediaType.sniff(ftyp("heic", "mif1"))).toEqual(Option.none())
    expect(MediaType.sniff(bytes([0x89, 0x50]))).toEqual(Option.none())
    expect(MediaType.sniff(new Uint8Array(0))).toEqual(Option.none())
  })

  it("checks a declared type against the bytes: aliases and parameters understood, audio in MP4 and WebM kept", () => {
    const png = samples[0]![1]
    expect(MediaType.check("image/png", png)).toEqual({ _tag: "Match", contentType: "image/png", kind: "image" })
    expect(MediaType.check("IMAGE/JPG; q=1", samples[1]![1])).toMatchObject({
      _tag: "Match",
      contentType: "image/jpeg"
    })
    expect(MediaType.check("audio/mp3", samples[8]![1])).toMatchObject({ _tag: "Match", contentType: "audio/mpeg" })
    expect(MediaType.check("audio/webm", samples[7]![1])).toEqual({
      _tag: "Match",
      contentType: "audio/webm",
      kind: "audio"
    })
    expect(MediaType.check("image/jpeg", png)).toEqual({
      _tag: "Mismatch",
      declared: "image/jpeg",
      actual: "image/png"
    })
    expect(MediaType.check("video/mp4", png)).toMatchObject({ _tag: "Mismatch", actual: "image/png" })
    expect(MediaType.check("image/svg+xml", png)).toEqual({ _tag: "Unsupported", declared: "image/svg+xml" })
    expect(MediaType.check("image/png", bytes(ascii("hello")))).toEqual({ _tag: "Unrecognised", declared: "image/png" })
  })
})

const SECRET = Redacted.make("a media secret of at least thirty-two bytes")

/**
 * A harness with signed media URLs valid one hour, a worker as asked, and nothing else on the
 * clock more often than daily but retention's pass (hourly), so that days pass in virtual time.
 */
const instance = (worker: boolean, urls: MediaUrls.Options = {
  mode: "signed",
  baseUrl: "https://appexec.example",
  secret: SECRET,
  ttlSeconds: 3600
}) => TestHarness.layer({ worker, config: { pollInterval: "1 day" } }).pipe(Layer.provideMerge(MediaUrls.layer(urls)))

const png = samples[0]![1]

const keyOf = (url: string) => new URL(url).pathname.slice("/media/".length)

describe("uploads", () => {
  it.scoped("are stored under their workspace's key and read back through the own-media path", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const alice = yield* TestHarness.signIn("alice")
      const upload = yield* appexec.uploads.create(alice, { contentType: "image/png", bytes: png })
      expect(upload).toEqual({
        url: expect.stringMatching(/^https:\/\/appexec\.example\/media\/uploads\/1970-01-01\//),
        contentType: "image/png",
        bytes: png.length,
        expiresAt: new Date(3600 * 1000)
      })
      expect(keyOf(upload.url).split("/").slice(0, 3)).toEqual(["uploads", "1970-01-01", alice.workspaceId])
      const read = yield* MediaResolver.resolve(upload.url)
      expect(Option.map(read, (b) => [b.contentType, b.bytes])).toEqual(Option.some(["image/png", png]))

      const refused = yield* Effect.flip(appexec.uploads.create(alice, { contentType: "image/gif", bytes: png }))
      expect(refused).toMatchObject({ _tag: "UnsupportedMedia", reason: "mismatch", code: "unsupported_media_type" })
      const untyped = yield* Effect.flip(appexec.uploads.create(alice, { contentType: undefined, bytes: png }))
      expect(untyped).toMatchObject({ _tag: "UnsupportedMedia", reason: "missing_type" })
      const empty = yield* Effect.flip(appexec.uploads.create(alice, { contentType: "image/png", bytes: bytes() }))
      expect(empty).toMatchObject({ _tag: "InvalidRequest", code: "invalid_request" })
    }).pipe(Effect.provide(instance(false))))

  it.scoped("sign their URL once, under the day it expires (read from the URLs' lifetime)", () => {
    const signedKeys: Array<string> = []
    return Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const alice = yield* TestHarness.signIn("alice")
      // Half an hour before midnight: a URL of an hour expires the next day.
      yield* TestClock.setTime(Date.UTC(1970, 0, 1, 23, 30))
      const upload = yield* appexec.uploads.create(alice, { contentType: "image/png", bytes: png })
      expect(upload.expiresAt).toEqual(new Date(Date.UTC(1970, 0, 2, 0, 30)))
      expect(keyOf(upload.url).split("/").slice(0, 3)).toEqual(["uploads", "1970-01-02", alice.workspaceId])
      expect(signedKeys).toEqual([keyOf(upload.url)])
    }).pipe(
      Effect.provide(
        TestHarness.layer({ worker: false, config: { pollInterval: "1 day" } }).pipe(
          Layer.provideMerge(
            Layer.effect(
              MediaUrls.MediaUrls,
              Effect.map(MediaUrls.MediaUrls, (signed) => ({
                ...signed,
                signedUrlFor: (key: string) => {
                  signedKeys.push(key)
                  return signed.signedUrlFor(key)
                }
              }))
            ).pipe(
              Layer.provide(
                MediaUrls.layer({
                  mode: "signed",
                  baseUrl: "https://appexec.example",
                  secret: SECRET,
                  ttlSeconds: 3600
                })
              )
            )
          )
        )
      )
    )
  })

  it.scoped("are unavailable where the media URLs are public: nothing is stored", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const alice = yield* TestHarness.signIn("alice")
      const refused = yield* Effect.flip(appexec.uploads.create(alice, { contentType: "image/png", bytes: png }))
      expect(refused).toMatchObject({ _tag: "UploadsUnavailable", code: "not_found" })
      expect((yield* MediaUrls.MediaUrls).signedTtlSeconds).toEqual(Option.none())
    }).pipe(Effect.provide(instance(false, { mode: "public", baseUrl: "https://cdn.example" }))))

  it.scoped("are the instance's own signed URLs also where outputs get other URLs (direct bucket media)", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const alice = yield* TestHarness.signIn("alice")
      const upload = yield* appexec.uploads.create(alice, { contentType: "image/png", bytes: png })
      expect(upload.url.startsWith("https://appexec.example/media/uploads/")).toBe(true)
      const read = yield* MediaResolver.resolve(upload.url)
      expect(Option.map(read, (b) => b.bytes)).toEqual(Option.some(png))
    }).pipe(
      Effect.provide(
        TestHarness.layer({ worker: false, config: { pollInterval: "1 day" } }).pipe(
          Layer.provideMerge(
            // As `--media-direct` does: outputs' URLs elsewhere, the checks and signed URLs the instance's.
            Layer.effect(
              MediaUrls.MediaUrls,
              Effect.map(MediaUrls.MediaUrls, (signed) => ({
                ...signed,
                urlFor: (key: string) => Effect.succeed(`https://bucket.example/${key}?X-Amz-Signature=0`)
              }))
            ).pipe(
              Layer.provide(
                MediaUrls.layer({
                  mode: "signed",
                  baseUrl: "https://appexec.example",
                  secret: SECRET,
                  ttlSeconds: 3600
                })
              )
            )
          )
        )
      )
    ))

  it.scoped("are kept while their URL works and deleted by prune once the day they expired is over", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const blobs = yield* BlobStore.BlobStore
      const alice = yield* TestHarness.signIn("alice")
      const first = yield* appexec.uploads.create(alice, { contentType: "image/png", bytes: png })
      const stored = () => Effect.map(blobs.get(keyOf(first.url)), Option.isSome)

      yield* appexec.operator.prune()
      expect(yield* stored()).toBe(true)
      // Expired (after an hour), but its day and the next are not over: kept.
      yield* TestClock.adjust(Duration.hours(26))
      yield* appexec.operator.prune()
      expect(yield* stored()).toBe(true)
      const later = yield* appexec.uploads.create(alice, { contentType: "image/png", bytes: png })
      yield* TestClock.adjust(Duration.hours(22))
      yield* appexec.operator.prune()
      expect(yield* stored()).toBe(false)
      // The one made a day later expires a day later.
      expect(Option.isSome(yield* blobs.get(keyOf(later.url)))).toBe(true)
      yield* TestClock.adjust(Duration.days(1))
      yield* appexec.operator.prune()
      expect(Option.isSome(yield* blobs.get(keyOf(later.url)))).toBe(false)
    }).pipe(Effect.provide(instance(false))))

  it.scoped("are deleted by the periodic retention pass where a worker runs", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const blobs = yield* BlobStore.BlobStore
      const alice = yield* TestHarness.signIn("alice")
      const upload = yield* appexec.uploads.create(alice, { contentType: "image/png", bytes: png })
      yield* TestClock.adjust(Duration.days(3))
      expect(Option.isNone(yield* blobs.get(keyOf(upload.url)))).toBe(true)
    }).pipe(Effect.provide(instance(true))))
})
