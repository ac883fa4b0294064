/**
 * The media settings of the standalone server (docs/nodes.md): signed, expiring URLs under the
 * server's own base URL, served by the HTTP app at `/media/…` (`@appexec/http` `MediaRoute`),
 * with the HMAC secret of the instance (`MediaSecret`: in the data directory on SQLite, in the
 * database on PostgreSQL, so that every process verifies what any of them signed); or an
 * operator's public base URL.
 */
import { type Errors, MediaUrls } from "@appexec/core"
import { Context, Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

/** The HMAC key of the instance's signed media URLs, read (or made) when first needed. */
export class MediaSecret extends Context.Tag("@appexec/server/MediaSecret")<
  MediaSecret,
  Effect.Effect<Redacted.Redacted<Uint8Array>, Errors.StorageError>
>() {}

/** The media secret of a data directory, created (32 random bytes, mode 0600) on first use. */
export const secretOf = (dataDir: string): Redacted.Redacted<Uint8Array> => {
  const file = join(dataDir, "media.secret")
  if (!existsSync(file)) writeFileSync(file, randomBytes(32), { mode: 0o600 })
  return Redacted.make(new Uint8Array(readFileSync(file)))
}

/**
 * The media URLs of `serve` and `worker`: under `publicBaseUrl` when the operator gives one (a
 * CDN or object storage that publishes the blobs; the server serves none), else signed on
 * `baseUrl` with the instance's `MediaSecret`.
 */
export const urlsLayer = (options: {
  readonly baseUrl: string
  readonly publicBaseUrl?: string | undefined
}): Layer.Layer<MediaUrls.MediaUrls, Errors.InvalidConfiguration | Errors.StorageError, MediaSecret> =>
  options.publicBaseUrl === undefined
    ? Layer.unwrapEffect(
      Effect.flatMap(MediaSecret, (secret) => secret).pipe(
        Effect.map((secret) => MediaUrls.layer({ mode: "signed", baseUrl: options.baseUrl, secret }))
      )
    )
    : MediaUrls.layer({ mode: "public", baseUrl: options.publicBaseUrl })
