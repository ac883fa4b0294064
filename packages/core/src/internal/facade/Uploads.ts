/**
 * Uploads (docs/api.md#uploads): a consumer's file, checked against its declared type, stored in
 * the `BlobStore` under a key of its workspace, and answered as a signed media URL of the
 * instance, which any `url` input reads from the store (`MediaResolver`). The key holds the day
 * the URL expires: `uploads/<YYYY-MM-DD>/<workspaceId>/<uploadId>`, so retention deletes whole
 * days of expired uploads by prefix (`sweep`) with no table to know them.
 */
import type { Authentication } from "@appexec/api"
import type { Upload } from "@appexec/api/Upload"
import { Effect, Option } from "effect"
import { BlobStore } from "../../BlobStore.js"
import { InvalidRequest, type StorageError, UnsupportedMedia, UploadsUnavailable } from "../../Errors.js"
import { IdGenerator } from "../../IdGenerator.js"
import * as MediaType from "../../MediaType.js"
import { MediaUrls, nowSeconds } from "../../MediaUrls.js"

/** The key prefix under which every upload is stored. */
export const PREFIX = "uploads/"

/** The blob holding the last expiry day whose uploads `sweep` deleted (`YYYY-MM-DD`). */
export const SWEPT_KEY = `${PREFIX}swept`

/**
 * How many days back the first `sweep` of a store looks (no day was swept before it). A store
 * with no record of a sweep has had no prune pass (one runs from every start), so it is new, or
 * lost that record: a month of expiry days covers it without a start that deletes hundreds of
 * empty days one by one.
 */
const FIRST_SWEEP_DAYS = 30

const DAY_MS = 24 * 60 * 60 * 1000

/** The UTC day of `ms` (epoch milliseconds) as `YYYY-MM-DD`. */
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

/** The key prefix of the uploads that expire on `day` (`YYYY-MM-DD`). */
export const dayPrefix = (day: string): string => `${PREFIX}${day}/`

/** A file to store: its bytes and the type its sender declared (`Content-Type`). */
export interface NewUpload {
  readonly contentType: string | undefined
  readonly bytes: Uint8Array
}

/** The errors of `create`. */
export type UploadError = UnsupportedMedia | UploadsUnavailable | InvalidRequest | StorageError

/** The uploads part of the facade, over the blob store, ids and the instance's media URLs (when signed). */
export const make = Effect.gen(function*() {
  const blobs = yield* BlobStore
  const ids = yield* IdGenerator
  const urls = yield* Effect.serviceOption(MediaUrls)

  const create = Effect.fn("Appexec.uploads.create")(function*(
    principal: Authentication.Principal,
    upload: NewUpload
  ) {
    if (upload.bytes.length === 0) {
      return yield* new InvalidRequest({ reason: "The upload is empty: send the file's bytes as the body." })
    }
    const declared = Option.getOrUndefined(MediaType.canonical(upload.contentType))
    const unsupported = (reason: UnsupportedMedia["reason"], actual?: string) =>
      new UnsupportedMedia({
        reason,
        declared: declared ?? "",
        supported: MediaType.supported,
        ...(actual === undefined ? {} : { actual })
      })
    if (declared === undefined || declared === "application/octet-stream") {
      return yield* unsupported("missing_type")
    }
    const checked = MediaType.check(declared, upload.bytes)
    switch (checked._tag) {
      case "Unsupported":
        return yield* unsupported("unsupported_type")
      case "Unrecognised":
        return yield* unsupported("unrecognised")
      case "Mismatch":
        return yield* unsupported("mismatch", checked.actual)
    }
    // With public media URLs the instance signs none: no uploads.
    const ttl = Option.flatMap(urls, (u) => u.signedTtlSeconds)
    if (Option.isNone(urls) || Option.isNone(ttl)) return yield* new UploadsUnavailable()
    // The expiry of a URL made now names the key's day.
    const expiresAt = (yield* nowSeconds) + ttl.value
    const key = `${dayPrefix(dayOf(expiresAt * 1000))}${principal.workspaceId}/${yield* ids.uuid}`
    yield* blobs.put(key, { contentType: checked.contentType, bytes: upload.bytes })
    // Signed a moment later: if that crosses midnight, the sweep's day of grace covers it.
    const signed = yield* urls.value.signedUrlFor(key)
    if (Option.isNone(signed)) return yield* new UploadsUnavailable()
    yield* Effect.annotateCurrentSpan({ "appexec.upload.bytes": upload.bytes.length })
    return {
      url: signed.value.url,
      contentType: checked.contentType,
      bytes: upload.bytes.length,
      expiresAt: new Date(signed.value.expiresAt * 1000)
    } satisfies Upload
  })

  return { create }
})

const decoder = new TextDecoder()

/**
 * Deletes the uploads whose URLs have expired: every day of expiry from the one after the last
 * swept (or `FIRST_SWEEP_DAYS` back) to the day before yesterday (UTC), so an upload is gone one
 * to two days after its URL stopped working. The swept day is written after the deletes, so a
 * crash in between only deletes again; answers how many days were swept.
 */
export const sweep = (now: number): Effect.Effect<number, StorageError, BlobStore> =>
  Effect.gen(function*() {
    const blobs = yield* BlobStore
    const last = dayOf(now - 2 * DAY_MS)
    const swept = yield* blobs.get(SWEPT_KEY)
    const previous = Option.flatMap(swept, (blob) => {
      const text = decoder.decode(blob.bytes)
      return /^\d{4}-\d{2}-\d{2}$/.test(text) ? Option.some(Date.parse(`${text}T00:00:00Z`)) : Option.none()
    })
    let day = Option.match(previous, {
      onNone: () => Date.parse(`${last}T00:00:00Z`) - FIRST_SWEEP_DAYS * DAY_MS,
      onSome: (ms) => ms + DAY_MS
    })
    let count = 0
    for (; dayOf(day) <= last; day += DAY_MS) {
      yield* blobs.deleteUnder(dayPrefix(dayOf(day)))
      count++
    }
    if (count > 0) {
      yield* blobs.put(SWEPT_KEY, { contentType: "text/plain", bytes: new TextEncoder().encode(last) })
    }
    return count
  })
