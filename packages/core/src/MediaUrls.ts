/**
 * Media URLs (DESIGN §5): the absolute URL at which a client downloads a blob that an execution
 * produced, and the handler that answers such URLs.
 *
 * Two ways, chosen by the operator:
 * - `public`: blobs are published elsewhere (a CDN or object storage bucket) and the URL is the
 *   operator's base URL followed by the blob key; appexec serves nothing itself.
 * - `signed`: the instance serves blobs itself, outside `/v1`, at unguessable expiring paths
 *   `<baseUrl>/media/<key>?exp=<unix seconds>&sig=<HMAC-SHA256, base64url>`. A forged, altered
 *   or expired path answers 404, exactly like a missing blob, so paths reveal nothing.
 *
 * The handler is plain data in, plain data out (`serve`), with a web `Request → Response`
 * wrapper (`webHandler`) for hosts that mount it next to the API.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import { Context, Effect, Layer, Option, Redacted, Runtime } from "effect"
import { BlobStore } from "./BlobStore.js"

/** The path segment under which signed media are served, relative to the base URL. */
export const MEDIA_PATH = "/media/"

/** How long a signed URL stays valid by default: 7 days. */
export const DEFAULT_TTL_SECONDS = 7 * 24 * 60 * 60

/** Longest blob key accepted. */
export const MAX_KEY_LENGTH = 512

const KEY = /^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/

/**
 * Whether `key` can name a blob in a URL: segments of letters, digits, `.`, `_` and `-`, each
 * starting with a letter or digit, separated by `/`. Such keys need no escaping and cannot
 * climb out of a directory (`..` is impossible).
 */
export const isBlobKey = (key: string): boolean => key.length <= MAX_KEY_LENGTH && KEY.test(key)

/** Settings of media URLs. */
export type Options =
  | {
      readonly mode: "public"
      /** Where blobs are published, such as `https://cdn.example.com/appexec`; the key is appended. */
      readonly baseUrl: string
    }
  | {
      readonly mode: "signed"
      /** The instance's own base URL as clients reach it, with any mount path (`https://api.example.com/appexec`). */
      readonly baseUrl: string
      /** The HMAC secret; at least 32 bytes. Changing it invalidates every URL handed out. */
      readonly secret: Redacted.Redacted<Uint8Array | string>
      /** Lifetime of a URL from the moment it is made (default 7 days). */
      readonly ttlSeconds?: number
    }

/** Turns blob keys into download URLs, and checks signed media paths. */
export class MediaUrls extends Context.Tag("@appexec/core/MediaUrls")<
  MediaUrls,
  {
    /** The absolute URL at which a client can GET the blob under `key`; an invalid key is a defect. */
    readonly urlFor: (key: string) => Effect.Effect<string>
    /**
     * The blob key and expiry (unix seconds) of a signed media URL that is valid now, relative
     * to the base path or not; none when it is not a media path, forged, altered or expired.
     */
    readonly verify: (url: URL) => Effect.Effect<Option.Option<{ readonly key: string; readonly expiresAt: number }>>
  }
>() {}

const trimSlash = (url: string) => url.replace(/\/+$/, "")

const secretBytes = (secret: Redacted.Redacted<Uint8Array | string>): Uint8Array => {
  const value = Redacted.value(secret)
  return typeof value === "string" ? new TextEncoder().encode(value) : value
}

/** The signature of `key` valid until `expiresAt` (unix seconds): HMAC-SHA256, base64url. */
export const signature = (secret: Uint8Array, key: string, expiresAt: number): string =>
  createHmac("sha256", secret).update(`appexec-media\n${key}\n${expiresAt}`).digest("base64url")

const sameSignature = (expected: string, given: string) => {
  const a = Buffer.from(expected, "base64url")
  const b = Buffer.from(given, "base64url")
  // Round-tripping rejects non-canonical encodings that decode to the same bytes.
  return a.length === b.length && b.toString("base64url") === given && timingSafeEqual(a, b)
}

const nowSeconds = Effect.clockWith((clock) => clock.currentTimeMillis).pipe(Effect.map((ms) => Math.floor(ms / 1000)))

/** Media URLs under a public base URL (CDN, object storage); `verify` accepts nothing. */
export const makePublic = (baseUrl: string): MediaUrls["Type"] => {
  const base = trimSlash(baseUrl)
  return {
    urlFor: (key) => (isBlobKey(key) ? Effect.succeed(`${base}/${key}`) : Effect.dieMessage(`invalid blob key '${key}'`)),
    verify: () => Effect.succeedNone
  }
}

/** Signed, expiring media URLs on the instance's own base URL; `layer` checks the secret's length. */
export const makeSigned = (options: {
  readonly baseUrl: string
  readonly secret: Redacted.Redacted<Uint8Array | string>
  readonly ttlSeconds?: number | undefined
}): MediaUrls["Type"] => {
  const base = trimSlash(options.baseUrl)
  const basePath = trimSlash(new URL(base).pathname)
  const secret = secretBytes(options.secret)
  const ttl = options.ttlSeconds ?? DEFAULT_TTL_SECONDS
  return {
    urlFor: (key) =>
      isBlobKey(key)
        ? Effect.map(nowSeconds, (now) => {
            const exp = now + ttl
            return `${base}${MEDIA_PATH}${key}?exp=${exp}&sig=${signature(secret, key, exp)}`
          })
        : Effect.dieMessage(`invalid blob key '${key}'`),
    verify: (url) =>
      Effect.map(nowSeconds, (now) => {
        const path = basePath !== "" && url.pathname.startsWith(`${basePath}/`) ? url.pathname.slice(basePath.length) : url.pathname
        if (!path.startsWith(MEDIA_PATH)) return Option.none()
        const key = path.slice(MEDIA_PATH.length)
        const exp = url.searchParams.get("exp") ?? ""
        const sig = url.searchParams.get("sig") ?? ""
        if (!isBlobKey(key) || !/^[0-9]{1,12}$/.test(exp)) return Option.none()
        const expiresAt = Number(exp)
        if (expiresAt < now || !sameSignature(signature(secret, key, expiresAt), sig)) return Option.none()
        return Option.some({ key, expiresAt })
      })
  }
}

/**
 * The media URLs of `options`. Signed mode with a secret shorter than 32 bytes is a defect at
 * layer construction.
 */
export const layer = (options: Options): Layer.Layer<MediaUrls> =>
  Layer.effect(
    MediaUrls,
    options.mode === "public"
      ? Effect.sync(() => makePublic(options.baseUrl))
      : secretBytes(options.secret).length < 32
        ? Effect.dieMessage("the media URL secret must be at least 32 bytes")
        : Effect.sync(() => makeSigned(options))
  )

/** A request to the media handler, as any server can describe it. */
export interface MediaRequest {
  readonly method: string
  /** The absolute request URL. */
  readonly url: string
  /** Request headers; names are matched case-insensitively. */
  readonly headers: Readonly<Record<string, string | undefined>> | Headers
}

/** The media handler's answer; `body` is absent for HEAD, 304 and errors without a body. */
export interface MediaResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array | undefined
}

const header = (headers: MediaRequest["headers"], name: string): string | undefined => {
  if (headers instanceof Headers) return headers.get(name) ?? undefined
  const found = Object.entries(headers).find(([k]) => k.toLowerCase() === name)
  return found?.[1]
}

const plain = (status: number, text: string, extra: Record<string, string> = {}): MediaResponse => {
  const body = new TextEncoder().encode(text)
  return {
    status,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "content-length": String(body.length),
      "cache-control": "no-store",
      ...extra
    },
    body
  }
}

const notFound = plain(404, "Not found\n")

/** Parses a single `bytes=` range against `size`; `undefined` for none, `null` for unsatisfiable. */
const parseRange = (value: string | undefined, size: number): { start: number; end: number } | undefined | null => {
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

/**
 * Answers a request for a signed media path: the blob with its `Content-Type`,
 * `Content-Length`, `ETag` and a `Cache-Control` that ends with the URL's validity; `HEAD`,
 * `If-None-Match` (304) and single byte ranges (206) are supported. Not a media path, forged,
 * expired or missing: 404. Other methods: 405. Storage failures: 500 with no details.
 */
export const serve = (request: MediaRequest): Effect.Effect<MediaResponse, never, MediaUrls | BlobStore> =>
  Effect.gen(function* () {
    const urls = yield* MediaUrls
    const blobs = yield* BlobStore
    const url = URL.canParse(request.url) ? new URL(request.url) : undefined
    if (url === undefined) return notFound
    const found = yield* urls.verify(url)
    if (Option.isNone(found)) return notFound
    if (request.method !== "GET" && request.method !== "HEAD") {
      return plain(405, "Method not allowed\n", { allow: "GET, HEAD" })
    }
    const blob = yield* blobs.get(found.value.key)
    if (Option.isNone(blob)) return notFound
    const { bytes, contentType } = blob.value
    const now = yield* nowSeconds
    const etag = `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 27)}"`
    const common = {
      etag,
      "cache-control": `private, max-age=${Math.max(0, found.value.expiresAt - now)}, immutable`,
      "accept-ranges": "bytes",
      "x-content-type-options": "nosniff",
      "content-security-policy": "default-src 'none'; sandbox"
    }
    if (header(request.headers, "if-none-match")?.split(",").some((t) => t.trim() === etag || t.trim() === "*")) {
      return { status: 304, headers: common, body: undefined }
    }
    const range = parseRange(header(request.headers, "range"), bytes.length)
    if (range === null) {
      return plain(416, "Range not satisfiable\n", { "content-range": `bytes */${bytes.length}` })
    }
    const body = range === undefined ? bytes : bytes.subarray(range.start, range.end + 1)
    return {
      status: range === undefined ? 200 : 206,
      headers: {
        ...common,
        "content-type": contentType,
        "content-length": String(body.length),
        ...(range === undefined ? {} : { "content-range": `bytes ${range.start}-${range.end}/${bytes.length}` })
      },
      body: request.method === "HEAD" ? undefined : body
    }
  }).pipe(
    Effect.catchTag("StorageError", (error) =>
      Effect.logError("media download failed", error).pipe(Effect.as(plain(500, "Internal error\n")))
    )
  )

/** A web `Response` of a media answer. */
export const toResponse = (answer: MediaResponse): Response =>
  new Response(answer.body === undefined ? null : Buffer.from(answer.body), {
    status: answer.status,
    headers: answer.headers
  })

/**
 * A web `Request → Response` handler for signed media paths, bound to the services of the
 * calling context. Mount it at `<base path>/media/*` beside the API.
 */
export const webHandler: Effect.Effect<(request: Request) => Promise<Response>, never, MediaUrls | BlobStore> =
  Effect.map(Effect.runtime<MediaUrls | BlobStore>(), (runtime) => {
    const run = (request: Request) =>
      serve({ method: request.method, url: request.url, headers: request.headers }).pipe(Effect.map(toResponse))
    return (request: Request) => Runtime.runPromise(runtime)(run(request))
  })
