/**
 * The media settings read without a process: `s3://BUCKET/PREFIX` as S3 names buckets and as blob
 * keys go, and the flags that need a bucket refused without one.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as MediaStorage from "../src/MediaStorage.js"

describe("MediaStorage", () => {
  it.each([
    ["s3://media", { bucket: "media", prefix: "" }],
    ["s3://media/", { bucket: "media", prefix: "" }],
    [" s3://my.media-1/appexec/prod/ ", { bucket: "my.media-1", prefix: "appexec/prod" }]
  ])("reads the location %j", (location, expected) => {
    expect(MediaStorage.parseLocation(location)).toEqual(Either.right(expected))
  })

  it.each(["media", "s3://", "s3://Media/x", "s3://ab", "s3://media/../x", "https://media/x", "s3://media/a b"])(
    "refuses the location %j",
    (location) => {
      expect(Either.isLeft(MediaStorage.parseLocation(location))).toBe(true)
    }
  )

  it.effect("a bucket with an endpoint and direct URLs; the flags that need a bucket refused without one", () =>
    Effect.gen(function*() {
      const bucket = { bucket: "media", prefix: "x" }
      expect(
        yield* MediaStorage.fromSettings({
          media: bucket,
          mediaEndpoint: "http://minio:9000",
          mediaDirect: true,
          mediaBaseUrl: undefined
        })
      ).toEqual({ bucket: "media", prefix: "x", endpoint: "http://minio:9000", direct: true })
      expect(yield* MediaStorage.fromSettings({ media: undefined, mediaEndpoint: undefined })).toBeUndefined()
      const refused = (settings: Parameters<typeof MediaStorage.fromSettings>[0]) =>
        MediaStorage.fromSettings(settings).pipe(Effect.flip, Effect.map((e) => e.message))
      expect(yield* refused({ media: undefined, mediaEndpoint: "http://minio:9000" })).toContain(
        "'--media-endpoint': applies to a bucket"
      )
      expect(yield* refused({ media: undefined, mediaEndpoint: undefined, mediaDirect: true })).toContain(
        "'--media-direct': presigns URLs of a bucket"
      )
      expect(
        yield* refused({
          media: bucket,
          mediaEndpoint: undefined,
          mediaDirect: true,
          mediaBaseUrl: "https://cdn.example.com"
        })
      ).toContain("either presigned bucket URLs or under --media-base-url")
      expect(MediaStorage.describe({ bucket: "media", prefix: "x", endpoint: "http://minio:9000", direct: false }))
        .toBe("s3://media/x at http://minio:9000")
    }))
})
