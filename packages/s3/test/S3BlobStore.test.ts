import { BlobStore, MediaUrls } from "@appexec/core"
import { Exchange, MediaRoute } from "@appexec/http"
import { MemoryStorage } from "@appexec/testing"
import { BlobStoreContract } from "@appexec/testing/contracts"
import { ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Exit, Layer, Option, Redacted, Scope, Stream, TestClock } from "effect"
import * as S3BlobStore from "../src/S3BlobStore.js"
import * as S3MediaUrls from "../src/S3MediaUrls.js"
import * as S3rver from "./support/S3rver.js"

let s3: S3rver.Running
const scope = Effect.runSync(Scope.make())
beforeAll(async () => {
  s3 = await Effect.runPromise(Scope.extend(S3rver.start(), scope))
})
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

let prefixes = 0
/** The store's options on the test bucket, under a prefix of its own (a fresh store). */
const optionsOf = (overrides: Partial<S3BlobStore.Options> = {}): S3BlobStore.Options => ({
  bucket: s3.bucket,
  prefix: `test-${process.pid}-${++prefixes}`,
  endpoint: s3.endpoint,
  region: "us-east-1",
  credentials: S3rver.credentials,
  ...overrides
})

/** Every key of the bucket under `prefix`. */
const keysUnder = (prefix: string) =>
  Effect.promise(async () => {
    const keys: Array<string> = []
    let token: string | undefined
    do {
      const page = await s3.client.send(
        new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) })
      )
      keys.push(...(page.Contents ?? []).map((o) => o.Key!))
      token = page.IsTruncated ? page.NextContinuationToken : undefined
    } while (token !== undefined)
    return keys
  })

describe("S3BlobStore under the contract", () => {
  BlobStoreContract.suite(
    "S3 (s3rver)",
    () => Layer.merge(MemoryStorage.layer, Layer.unwrapEffect(Effect.sync(() => S3BlobStore.layer(optionsOf()))))
  )
})

describe("S3BlobStore", () => {
  it.scoped("keeps each blob as the object <prefix>/<key> with its content type", () =>
    Effect.gen(function*() {
      const options = optionsOf()
      const store = yield* Effect.provide(BlobStore.BlobStore, S3BlobStore.layer({ ...options, check: true }))
      yield* store.put("executions/e1/poster.png", { contentType: "image/png", bytes: Uint8Array.from([1, 2, 3]) })
      expect(yield* keysUnder(`${options.prefix}/`)).toEqual([`${options.prefix}/executions/e1/poster.png`])
      expect(yield* store.get("executions/e1/poster.png")).toEqual(
        Option.some({ contentType: "image/png", bytes: Uint8Array.from([1, 2, 3]) })
      )
    }))

  it.scoped(
    "lists and deletes an execution's objects page by page (more than one list page of 1000), and no others",
    () =>
      Effect.gen(function*() {
        const options = optionsOf()
        const store = yield* Effect.provide(BlobStore.BlobStore, S3BlobStore.layer(options))
        const one = BlobStore.executionPrefix("00000000-0000-4000-8500-000000000001")
        const two = BlobStore.executionPrefix("00000000-0000-4000-8500-000000000002")
        // Each in a directory of its own: s3rver's file store races when one batch empties a directory.
        yield* Effect.forEach(
          Array.from({ length: 1003 }, (_, i) => i),
          (i) =>
            Effect.promise(() =>
              s3.client.send(
                new PutObjectCommand({ Bucket: s3.bucket, Key: `${options.prefix}/${one}d${i}/f.png`, Body: "x" })
              )
            ),
          { concurrency: 8 }
        )
        yield* store.put(`${two}kept.png`, { contentType: "image/png", bytes: Uint8Array.from([7]) })
        expect((yield* keysUnder(`${options.prefix}/${one}`)).length).toBe(1003)
        // A listing goes past the first page of 1000, each blob once, keys without the store's prefix.
        const listed = Chunk.toArray(yield* Stream.runCollect(store.list!(one)))
        expect(new Set(listed.map((entry) => entry.key)).size).toBe(1003)
        expect(listed.every((entry) => entry.key.startsWith(one) && entry.size === 1)).toBe(true)
        yield* store.deleteUnder(one)
        expect(yield* keysUnder(`${options.prefix}/${one}`)).toEqual([])
        expect(yield* keysUnder(`${options.prefix}/${two}`)).toEqual([`${options.prefix}/${two}kept.png`])
        // Nothing left to delete is no error.
        yield* store.deleteUnder(one)
      }),
    60_000
  )

  it.scoped("refuses keys and prefixes that are not blob keys, an empty prefix (the whole bucket) first of all", () =>
    Effect.gen(function*() {
      const options = optionsOf()
      const store = yield* Effect.provide(BlobStore.BlobStore, S3BlobStore.layer(options))
      yield* store.put("executions/e/a.png", { contentType: "image/png", bytes: Uint8Array.from([1]) })
      for (const prefix of ["", "/", "executions", "../", "executions//"]) {
        const error = yield* store.deleteUnder(prefix).pipe(Effect.flip)
        expect(error._tag).toBe("StorageError")
      }
      for (const key of ["../x", "/etc/passwd", "a//b", ""]) {
        expect((yield* store.put(key, { contentType: "a/b", bytes: new Uint8Array() }).pipe(Effect.flip))._tag).toBe(
          "StorageError"
        )
      }
      expect(yield* keysUnder(`${options.prefix}/`)).toEqual([`${options.prefix}/executions/e/a.png`])
    }))

  it.scoped("a missing bucket is a StorageError naming the S3 call, the bucket and the S3 error code", () =>
    Effect.gen(function*() {
      const store = yield* Effect.provide(
        BlobStore.BlobStore,
        S3BlobStore.layer(optionsOf({ bucket: "no-such-bucket" }))
      )
      const put = yield* store.put("executions/e/a.png", { contentType: "image/png", bytes: Uint8Array.from([1]) })
        .pipe(Effect.flip)
      expect(put.message).toContain("S3 PutObject on bucket 'no-such-bucket': NoSuchBucket")
      const get = yield* store.get("executions/e/a.png").pipe(Effect.flip)
      expect(get.message).toContain("S3 GetObject on bucket 'no-such-bucket': NoSuchBucket")
      const deleted = yield* store.deleteUnder("executions/e/").pipe(Effect.flip)
      expect(deleted.message).toContain("S3 ListObjectsV2 on bucket 'no-such-bucket': NoSuchBucket")
      // Checked at start, the same bucket fails the layer.
      const checked = yield* Effect.provide(
        BlobStore.BlobStore,
        S3BlobStore.layer({ ...optionsOf({ bucket: "no-such-bucket" }), check: true })
      ).pipe(Effect.flip)
      expect(checked.message).toContain("S3 HeadBucket on bucket 'no-such-bucket'")
    }))

  it.scoped("an unreachable endpoint is a StorageError, within the connection timeout", () =>
    Effect.gen(function*() {
      // A port nothing listens on: port 1 of the loopback address refuses at once.
      const store = yield* Effect.provide(
        BlobStore.BlobStore,
        S3BlobStore.layer(optionsOf({ endpoint: "http://127.0.0.1:1", connectionTimeoutMs: 1000 }))
      )
      const error = yield* store.get("executions/e/a.png").pipe(Effect.flip)
      expect(error.message).toMatch(/^Storage operation 'S3 GetObject on bucket 'appexec-media': /)
    }), 60_000)
})

describe("S3MediaUrls (direct media URLs)", () => {
  const signed = MediaUrls.makeSigned({
    baseUrl: "https://api.example.com",
    secret: Redacted.make("s".repeat(32))
  })

  it.scoped("presigns a GET of the object for the signed URLs' lifetime; fetched, it answers the bytes", () =>
    Effect.gen(function*() {
      const options = optionsOf()
      const layer = S3BlobStore.layer(options)
      const store = yield* Effect.provide(BlobStore.BlobStore, layer)
      const bytes = Uint8Array.from([137, 80, 78, 71, 1, 2, 3])
      yield* store.put("executions/e1/out.png", { contentType: "image/png", bytes })
      const now = Date.now()
      yield* TestClock.setTime(now)
      const urls = yield* S3MediaUrls.make({ signed }).pipe(Effect.provide(layer))
      const url = new URL(yield* urls.urlFor("executions/e1/out.png"))
      expect(`${url.origin}${url.pathname}`).toBe(`${s3.endpoint}/${s3.bucket}/${options.prefix}/executions/e1/out.png`)
      expect(url.searchParams.get("X-Amz-Algorithm")).toBe("AWS4-HMAC-SHA256")
      expect(url.searchParams.get("X-Amz-Expires")).toBe(String(MediaUrls.DEFAULT_TTL_SECONDS))
      expect(url.searchParams.get("X-Amz-Date")).toBe(
        new Date(Math.floor(now / 1000) * 1000).toISOString().replace(/[-:]/g, "").replace(/\.000/, "")
      )
      expect(url.searchParams.get("X-Amz-Credential")).toMatch(/^S3RVER\/\d{8}\/us-east-1\/s3\/aws4_request$/)
      expect(url.searchParams.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/)
      const response = yield* Effect.promise(() => fetch(url))
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("image/png")
      expect(new Uint8Array(yield* Effect.promise(() => response.arrayBuffer()))).toEqual(bytes)
      // Checks stay the signed URLs': an instance's own URL still verifies, a presigned one is foreign.
      expect((yield* urls.classify(url.href))._tag).toBe("Foreign")
      const own = yield* signed.urlFor("executions/e1/out.png")
      expect((yield* urls.classify(own))._tag).toBe("Valid")
      // Uploads are given the instance's own signed URL, which inputs read from the store, and its lifetime.
      expect(urls.signedTtlSeconds).toEqual(signed.signedTtlSeconds)
      expect(urls.signedTtlSeconds).toEqual(Option.some(MediaUrls.DEFAULT_TTL_SECONDS))
      const upload = yield* urls.signedUrlFor("uploads/x/y")
      expect(Option.map(upload, (u) => u.url.startsWith("https://api.example.com/media/uploads/x/y?exp="))).toEqual(
        Option.some(true)
      )
    }))

  it.scoped("a presigned URL past its lifetime is refused by the bucket; a shorter lifetime is kept", () =>
    Effect.gen(function*() {
      const options = optionsOf()
      const layer = S3BlobStore.layer(options)
      const store = yield* Effect.provide(BlobStore.BlobStore, layer)
      yield* store.put("executions/e2/out.png", { contentType: "image/png", bytes: Uint8Array.from([1]) })
      // Signed an hour and a second ago for an hour.
      yield* TestClock.setTime(Date.now() - 3_601_000)
      const urls = yield* S3MediaUrls.make({ signed, ttlSeconds: 3600 }).pipe(Effect.provide(layer))
      const url = yield* urls.urlFor("executions/e2/out.png")
      expect(new URL(url).searchParams.get("X-Amz-Expires")).toBe("3600")
      const response = yield* Effect.promise(() => fetch(url))
      expect(response.status).toBe(403)
      expect(yield* Effect.promise(() => response.text())).toContain("Request has expired")
      // More than S3 allows is capped at 7 days.
      const long = yield* S3MediaUrls.make({ signed, ttlSeconds: 30 * 86_400 }).pipe(Effect.provide(layer))
      expect(new URL(yield* long.urlFor("executions/e2/out.png")).searchParams.get("X-Amz-Expires")).toBe("604800")
    }))
})

describe("the media route over S3BlobStore (the instance's own signed URLs, read from the bucket)", () => {
  /** The route's answer: status, headers and body bytes. */
  const get = (url: string, headers: Record<string, string> = {}, method = "GET") =>
    Effect.gen(function*() {
      const response = yield* MediaRoute.answer({ method, url, headers, requestId: "test" })
      const body = response.body
      if (Exchange.isStreamed(body)) return yield* Effect.dieMessage("the media route streams no answer")
      return {
        status: response.status,
        headers: response.headers,
        body: typeof body === "string" ? new TextEncoder().encode(body) : body
      }
    })

  it.scoped("a signed URL serves the object whole, by range and by HEAD; altered or expired it answers 404", () =>
    Effect.gen(function*() {
      const bytes = new TextEncoder().encode("0123456789 media bytes from the bucket")
      const services = Layer.merge(
        S3BlobStore.layer(optionsOf()),
        MediaUrls.layer({
          mode: "signed",
          baseUrl: "https://api.example.com",
          secret: Redacted.make("0123456789abcdef0123456789abcdef"),
          ttlSeconds: 3600
        })
      )
      yield* Effect.gen(function*() {
        const blobs = yield* BlobStore.BlobStore
        yield* blobs.put("executions/e3/clip.mp4", { contentType: "video/mp4", bytes })
        yield* TestClock.setTime(1_000_000)
        const url = yield* Effect.flatMap(MediaUrls.MediaUrls, (urls) => urls.urlFor("executions/e3/clip.mp4"))

        const whole = yield* get(url)
        expect([whole.status, whole.headers["content-type"], whole.headers["accept-ranges"]]).toEqual([
          200,
          "video/mp4",
          "bytes"
        ])
        expect(whole.body).toEqual(bytes)
        const range = yield* get(url, { range: "bytes=2-5" })
        expect([range.status, range.headers["content-range"], range.headers["content-length"]]).toEqual([
          206,
          `bytes 2-5/${bytes.length}`,
          "4"
        ])
        expect(range.body).toEqual(bytes.subarray(2, 6))
        const head = yield* get(url, {}, "HEAD")
        expect([head.status, head.headers["content-length"], head.body]).toEqual([200, String(bytes.length), undefined])

        const altered = url.replace(/sig=([A-Za-z0-9_-])/, (_, c: string) => `sig=${c === "A" ? "B" : "A"}`)
        expect((yield* get(altered)).status).toBe(404)
        const otherKey = url.replace("clip.mp4", "clip.png")
        expect((yield* get(otherKey)).status).toBe(404)
        yield* TestClock.adjust("3601 seconds")
        expect((yield* get(url)).status).toBe(404)
      }).pipe(Effect.provide(services))
    }))
})
