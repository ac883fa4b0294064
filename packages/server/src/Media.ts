/**
 * Media produced by executions, served by the standalone server itself at signed, expiring
 * paths outside `/v1` (`/media/…`, DESIGN §5). The HMAC secret lives in the data directory.
 */
import { BlobStore, MediaUrls } from "@appexec/core"
import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

/** The media secret of a data directory, created (32 random bytes, mode 0600) on first use. */
export const secretOf = (dataDir: string): Redacted.Redacted<Uint8Array> => {
  const file = join(dataDir, "media.secret")
  if (!existsSync(file)) writeFileSync(file, randomBytes(32), { mode: 0o600 })
  return Redacted.make(new Uint8Array(readFileSync(file)))
}

/** Whether a request path is a media path. */
export const isMediaPath = (url: string) => url.startsWith(MediaUrls.MEDIA_PATH)

/** Answers media paths from the blob store. */
export const app = (baseUrl: string): HttpApp.Default<never, MediaUrls.MediaUrls | BlobStore.BlobStore> =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(request.headers)) if (typeof v === "string") headers[k] = v
    const answer = yield* MediaUrls.serve({ method: request.method, url: `${baseUrl}${request.url}`, headers })
    return HttpServerResponse.uint8Array(answer.body ?? new Uint8Array(0), {
      status: answer.status,
      headers: answer.headers
    })
  })
