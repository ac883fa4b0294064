/**
 * The media route of the HTTP app: `<base path>/media/<key>?exp=…&sig=…`, outside `/v1`,
 * answering the signed, expiring URLs that media outputs hand out (see `MediaUrls` in core). It
 * serves whenever the context holds `MediaUrls` and a `BlobStore` (it does wherever the built-in
 * nodes run), so the URLs an execution produces are always URLs the same app answers. No
 * authentication (the signature is the credential) and no rate limit.
 *
 * The bytes come with `Content-Type`, `Content-Length`, `ETag` and a `Cache-Control` that ends
 * with the URL's validity; `HEAD`, `If-None-Match` (304, compared weakly) and single byte ranges
 * (206; with `If-Range`, only when it names the current tag exactly, else the whole, 200) are
 * supported, as RFC 9110 says. The store is asked for the blob's size, type and version first (`BlobStore.stat`),
 * then for the asked range only (`BlobStore.getRange`), so a seek in a 20 MB video reads one
 * range; `HEAD` and 304 read no bytes. A store without `stat` is read whole, once per answer.
 * The ETag derives from the key and the blob's version. An unknown, forged, altered, expired or
 * missing path answers 404 in the error body, other methods 405, storage failures 500 with the
 * request id.
 */
import { BlobStore, MediaUrls } from "@appexec/core"
import { sha256 } from "@noble/hashes/sha2.js"
import { Context, Effect, Encoding, Option } from "effect"
import { noneMatch, rangeApplies } from "./internal/EntityTags.js"
import * as ErrorAnswers from "./internal/ErrorAnswers.js"
import type { ServerResponse } from "./internal/Exchange.js"

/** The path prefix of media, relative to the base path. */
export const PREFIX = MediaUrls.MEDIA_PATH

/** Whether a path relative to the base path is a media path. */
export const isMediaPath = (path: string): boolean => path.startsWith(PREFIX)

/** A request to the media route, as the HTTP app sees it. */
export interface Request {
  readonly method: string
  /** The path and query relative to the base path, e.g. `/media/executions/…?exp=…&sig=…`. */
  readonly url: string
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly requestId: string
}

/** Answers media requests. */
export type Route = (request: Request) => Effect.Effect<ServerResponse>

// The origin is irrelevant to the signature check, which reads only the path and the query.
const ORIGIN = "http://appexec.invalid"

/** An `invalid_request` answer with an HTTP status of its own (405, 416), not kept in caches. */
const error = (status: number, message: string, headers: Record<string, string> = {}) =>
  ErrorAnswers.answer(status, { code: "invalid_request", message }, { "cache-control": "no-store", ...headers })

/** 404 `not_found` (its status the API's), not kept in caches. */
const notFound = () =>
  ErrorAnswers.fromInfo(
    { code: "not_found", message: "No media at this path: the link is unknown, altered or expired." },
    { "cache-control": "no-store" }
  )

/** Parses a single `bytes=` range against `size`; `undefined` for none, `null` for unsatisfiable. */
export const parseRange = (
  value: string | undefined,
  size: number
): { start: number; end: number } | undefined | null => {
  if (value === undefined) return undefined
  const m = /^bytes=(\d*)-(\d*)$/.exec(value.trim())
  if (m === null || (m[1] === "" && m[2] === "")) return undefined
  if (m[1] === "") {
    const suffix = Number(m[2])
    if (suffix === 0) return null
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(m[1])
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1)
  return start >= size || end < start ? null : { start, end }
}

/** The answer to one media request, over the media URLs and blobs of the context. */
export const answer = (
  request: Request
): Effect.Effect<ServerResponse, never, MediaUrls.MediaUrls | BlobStore.BlobStore> =>
  Effect.gen(function*() {
    const urls = yield* MediaUrls.MediaUrls
    const blobs = yield* BlobStore.BlobStore
    const url = URL.canParse(request.url, ORIGIN) ? new URL(request.url, ORIGIN) : undefined
    if (url === undefined) return notFound()
    const found = yield* urls.verify(url)
    if (Option.isNone(found)) return notFound()
    if (request.method !== "GET" && request.method !== "HEAD") {
      return error(405, "Media answer GET and HEAD only.", { allow: "GET, HEAD" })
    }
    const key = found.value.key
    // A store without `stat` is read whole once: the answer's headers and bytes come from that read.
    const whole = blobs.stat === undefined ? yield* blobs.get(key) : undefined
    const info = whole === undefined ? yield* BlobStore.stat(blobs, key) : Option.map(whole, BlobStore.infoOf)
    if (Option.isNone(info)) return notFound()
    const { contentType, size, version } = info.value
    const now = yield* MediaUrls.nowSeconds
    // From the key and the store's version of the blob, which a put changes: no hash of the bytes.
    const etag = `"${
      Encoding.encodeBase64Url(sha256(new TextEncoder().encode(`${key}\n${size}\n${version}`))).slice(0, 27)
    }"`
    const common = {
      etag,
      "cache-control": `private, max-age=${Math.max(0, found.value.expiresAt - now)}, immutable`,
      "accept-ranges": "bytes",
      "x-content-type-options": "nosniff",
      "content-security-policy": "default-src 'none'; sandbox"
    }
    if (noneMatch(request.headers["if-none-match"], etag)) {
      return { status: 304, headers: common, body: undefined }
    }
    // A range of another version than the client holds would not fit with its bytes: the whole.
    const range = rangeApplies(request.headers["if-range"], etag)
      ? parseRange(request.headers["range"], size)
      : undefined
    if (range === null) {
      return error(416, "The requested byte range is not satisfiable.", {
        "content-range": `bytes */${size}`
      })
    }
    const length = range === undefined ? size : range.end - range.start + 1
    const headers = {
      ...common,
      "content-type": contentType,
      "content-length": String(length),
      ...(range === undefined ? {} : { "content-range": `bytes ${range.start}-${range.end}/${size}` })
    }
    const status = range === undefined ? 200 : 206
    if (request.method === "HEAD") return { status, headers, body: undefined }
    // Only the asked bytes are read from the store (a seek in a video reads one range).
    const body = whole !== undefined
      ? Option.map(whole, (blob) => range === undefined ? blob.bytes : blob.bytes.subarray(range.start, range.end + 1))
      : range === undefined
      ? Option.map(yield* blobs.get(key), (blob) => blob.bytes)
      : yield* BlobStore.getRange(blobs, key, range.start, range.end)
    // Deleted (or replaced by another length) between the two reads: 404, as a moment later.
    if (Option.isNone(body) || body.value.length !== length) return notFound()
    return { status, headers, body: body.value }
  }).pipe(
    Effect.catchTag("StorageError", (cause) =>
      Effect.logError("media download failed", cause).pipe(Effect.as(ErrorAnswers.internalError(request.requestId))))
  )

/**
 * The media route over the `MediaUrls` and `BlobStore` of the context; none when either is
 * missing (then `/media/…` is an unknown path like any other).
 */
export const make: Effect.Effect<Option.Option<Route>> = Effect.gen(function*() {
  const urls = yield* Effect.serviceOption(MediaUrls.MediaUrls)
  const blobs = yield* Effect.serviceOption(BlobStore.BlobStore)
  if (Option.isNone(urls) || Option.isNone(blobs)) return Option.none()
  const services = Context.make(MediaUrls.MediaUrls, urls.value).pipe(Context.add(BlobStore.BlobStore, blobs.value))
  const route: Route = (request) => Effect.provide(answer(request), services)
  return Option.some(route)
})

/**
 * A warning when the signed media URLs of `MediaUrls` do not point under `basePath` (the
 * instance's base URL must include the mount path, e.g. `https://host.example/api`); none in
 * public mode or when they agree.
 */
export const checkBasePath = (basePath: string): Effect.Effect<void> =>
  Effect.gen(function*() {
    const urls = yield* Effect.serviceOption(MediaUrls.MediaUrls)
    if (Option.isNone(urls)) return
    const probe = new URL(yield* urls.value.urlFor("probe"))
    // Only signed URLs verify; public ones point elsewhere by design.
    if (Option.isNone(yield* urls.value.verify(probe))) return
    if (!probe.pathname.startsWith(`${basePath}${PREFIX}`)) {
      yield* Effect.logWarning(
        `media URLs point at ${probe.origin}${
          probe.pathname.slice(0, -"probe".length)
        }, but this app serves them under ` +
          `${basePath}${PREFIX}: give MediaUrls a base URL that ends with the mount path '${basePath || "/"}'`
      )
    }
  })
