/**
 * Media URLs (docs/nodes.md): the absolute URL at which a client downloads a blob that an execution
 * produced, and the handler that answers such URLs.
 *
 * Two ways, chosen by the operator:
 * - `public`: blobs are published elsewhere (a CDN or object storage bucket) and the URL is the
 *   operator's base URL followed by the blob key; appexec serves nothing itself.
 * - `signed`: the instance serves blobs itself, outside `/v1`, at unguessable expiring paths
 *   `<baseUrl>/media/<key>?exp=<unix seconds>&sig=<HMAC-SHA256, base64url>`. A forged, altered
 *   or expired path answers 404, exactly like a missing blob, so paths reveal nothing.
 *
 * The HTTP adapter (`@appexec/http`, `MediaRoute`) answers such URLs from the `BlobStore`;
 * `classify` tells nodes whether a URL they were given is one of them (`MediaResolver`).
 */
import { hmac } from "@noble/hashes/hmac.js"
import { sha256 } from "@noble/hashes/sha2.js"
import { utf8ToBytes } from "@noble/hashes/utils.js"
import { Context, Data, Effect, Either, Encoding, Layer, Option, Redacted } from "effect"
import { InvalidConfiguration } from "./Errors.js"

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
     * The instance's own signed URL of the blob under `key` (answered by its media route, read
     * back by `classify`) with its expiry (unix seconds), whatever `urlFor` hands out (a
     * presigned bucket URL with direct media); none when the instance signs no URLs (public
     * mode). Uploads are given these. An invalid key is a defect.
     */
    readonly signedUrlFor: (
      key: string
    ) => Effect.Effect<Option.Option<{ readonly url: string; readonly expiresAt: number }>>
    /**
     * How long a URL of `signedUrlFor` lasts from the moment it is made (seconds), so that a
     * caller knows its expiry before signing it (an upload's key names its expiry day); none when
     * the instance signs no URLs (public mode).
     */
    readonly signedTtlSeconds: Option.Option<number>
    /**
     * The blob key and expiry (unix seconds) of a signed media URL that is valid now, relative
     * to the base path or not; none when it is not a media path, forged, altered or expired.
     */
    readonly verify: (url: URL) => Effect.Effect<Option.Option<{ readonly key: string; readonly expiresAt: number }>>
    /**
     * What an absolute URL is to this instance: `Foreign` unless it is under the instance's own
     * signed media path (same origin, `<base path>/media/`; always `Foreign` in public mode);
     * `Valid` with the blob key when its signature verifies and it has not expired; `Expired`
     * when it was signed here but its time is over; `Forged` when it is under the media path
     * but its key, expiry or signature is not one this instance made.
     */
    readonly classify: (url: string) => Effect.Effect<OwnUrl>
  }
>() {}

/** What a URL is to the instance that answers it (`MediaUrls.classify`). */
export type OwnUrl = Data.TaggedEnum<{
  /** Not a signed media URL of this instance: fetch it like any other URL. */
  Foreign: {}
  /** A signed media URL of this instance, valid now: the blob under `key`. */
  Valid: { readonly key: string; readonly expiresAt: number }
  /** Signed by this instance, but expired at `expiresAt` (unix seconds). */
  Expired: { readonly expiresAt: number }
  /** Under this instance's media path, but not signed by it (altered, forged or truncated). */
  Forged: {}
}>

/** Constructors and matchers of `OwnUrl`. */
export const OwnUrl = Data.taggedEnum<OwnUrl>()

const trimSlash = (url: string) => url.replace(/\/+$/, "")

const secretBytes = (secret: Redacted.Redacted<Uint8Array | string>): Uint8Array => {
  const value = Redacted.value(secret)
  return typeof value === "string" ? new TextEncoder().encode(value) : value
}

/** The signature of `key` valid until `expiresAt` (unix seconds): HMAC-SHA256, base64url. */
export const signature = (secret: Uint8Array, key: string, expiresAt: number): string =>
  Encoding.encodeBase64Url(hmac(sha256, secret, utf8ToBytes(`appexec-media\n${key}\n${expiresAt}`)))

/** Compares in time that depends only on the lengths, not on where the bytes differ. */
const constantTimeEqual = (a: Uint8Array, b: Uint8Array) => {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!
  return diff === 0
}

const sameSignature = (expected: string, given: string) => {
  const a = Either.getOrUndefined(Encoding.decodeBase64Url(expected))
  const b = Either.getOrUndefined(Encoding.decodeBase64Url(given))
  // Round-tripping rejects non-canonical encodings that decode to the same bytes.
  return a !== undefined && b !== undefined && Encoding.encodeBase64Url(b) === given && constantTimeEqual(a, b)
}

/** The current time in unix seconds, from `Clock`. */
export const nowSeconds = Effect.clockWith((clock) => clock.currentTimeMillis).pipe(
  Effect.map((ms) => Math.floor(ms / 1000))
)

/** Media URLs under a public base URL (CDN, object storage); `verify` accepts nothing. */
export const makePublic = (baseUrl: string): MediaUrls["Type"] => {
  const base = trimSlash(baseUrl)
  return {
    urlFor: (
      key
    ) => (isBlobKey(key) ? Effect.succeed(`${base}/${key}`) : Effect.dieMessage(`invalid blob key '${key}'`)),
    signedUrlFor: (key) => (isBlobKey(key) ? Effect.succeedNone : Effect.dieMessage(`invalid blob key '${key}'`)),
    signedTtlSeconds: Option.none(),
    verify: () => Effect.succeedNone,
    // Public URLs carry no signature: whatever their host, they are fetched like any URL.
    classify: () => Effect.succeed(OwnUrl.Foreign())
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
  const origin = new URL(base).origin

  /** Checks a media path (relative to the base path, starting with `/media/`) and its query at `now`. */
  const check = (path: string, query: URLSearchParams, now: number): OwnUrl => {
    const key = path.slice(MEDIA_PATH.length)
    const exp = query.get("exp") ?? ""
    const sig = query.get("sig") ?? ""
    if (!isBlobKey(key) || !/^[0-9]{1,12}$/.test(exp)) return OwnUrl.Forged()
    const expiresAt = Number(exp)
    // The signature first: only a URL this instance signed may be told apart as expired.
    if (!sameSignature(signature(secret, key, expiresAt), sig)) return OwnUrl.Forged()
    return expiresAt < now ? OwnUrl.Expired({ expiresAt }) : OwnUrl.Valid({ key, expiresAt })
  }

  const signedUrlFor = (key: string) =>
    isBlobKey(key)
      ? Effect.map(nowSeconds, (now) => {
        const exp = now + ttl
        return { url: `${base}${MEDIA_PATH}${key}?exp=${exp}&sig=${signature(secret, key, exp)}`, expiresAt: exp }
      })
      : Effect.dieMessage(`invalid blob key '${key}'`)

  return {
    urlFor: (key) => Effect.map(signedUrlFor(key), (signed) => signed.url),
    signedUrlFor: (key) => Effect.map(signedUrlFor(key), Option.some),
    signedTtlSeconds: Option.some(ttl),
    verify: (url) =>
      Effect.map(nowSeconds, (now) => {
        const path = basePath !== "" && url.pathname.startsWith(`${basePath}/`)
          ? url.pathname.slice(basePath.length)
          : url.pathname
        if (!path.startsWith(MEDIA_PATH)) return Option.none()
        const checked = check(path, url.searchParams, now)
        return checked._tag === "Valid"
          ? Option.some({ key: checked.key, expiresAt: checked.expiresAt })
          : Option.none()
      }),
    classify: (raw) =>
      Effect.map(nowSeconds, (now) => {
        const url = URL.canParse(raw) ? new URL(raw) : undefined
        // The origin compares scheme, host and port as the URL parser normalises them.
        if (url === undefined || url.origin !== origin) return OwnUrl.Foreign()
        const prefix = `${basePath}${MEDIA_PATH}`
        if (!url.pathname.startsWith(prefix)) return OwnUrl.Foreign()
        return check(url.pathname.slice(basePath.length), url.searchParams, now)
      })
  }
}

/**
 * The media URLs of `options`. A base URL that is not an absolute http(s) URL, or a signing
 * secret shorter than 32 bytes, fails the layer with `InvalidConfiguration`.
 */
export const layer = (options: Options): Layer.Layer<MediaUrls, InvalidConfiguration> =>
  Layer.effect(
    MediaUrls,
    Effect.suspend(() => {
      if (!URL.canParse(options.baseUrl) || !/^https?:$/.test(new URL(options.baseUrl).protocol)) {
        return Effect.fail(
          new InvalidConfiguration({
            setting: "media base URL",
            reason: `'${options.baseUrl}' is not an absolute http(s) URL`
          })
        )
      }
      if (options.mode === "public") return Effect.succeed(makePublic(options.baseUrl))
      if (secretBytes(options.secret).length < 32) {
        return Effect.fail(
          new InvalidConfiguration({ setting: "media URL secret", reason: "must be at least 32 bytes" })
        )
      }
      return Effect.succeed(makeSigned(options))
    })
  )
