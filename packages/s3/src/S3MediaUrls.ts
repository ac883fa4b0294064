/**
 * Direct media URLs (`--media-direct`): a client downloads an output's media straight from the
 * bucket of the `S3BlobStore`, by a presigned GET URL (SigV4, `X-Amz-Expires`) that lasts as long
 * as the instance's own signed URLs (7 days by default, which is also the longest S3 allows).
 * Checking URLs stays with the instance's signed media URLs (`verify`, `classify`), so that a
 * signed URL handed out before still answers, and so do uploads (`signedUrlFor`, `signedTtlSeconds`); a presigned URL
 * given back as an input is fetched like any other URL (S3 checks its signature).
 */
import { MediaUrls } from "@appexec/core"
import { GetObjectCommand } from "@aws-sdk/client-s3"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import { Effect, Layer } from "effect"
import { S3Bucket } from "./S3BlobStore.js"

/** The longest a presigned S3 URL may last (SigV4): 7 days. */
export const MAX_TTL_SECONDS = 7 * 24 * 60 * 60

/**
 * Media URLs whose `urlFor` presigns a GET of the blob's object for `ttlSeconds` (default: the
 * signed URLs' default, at most `MAX_TTL_SECONDS`), and whose checks are `signed`'s.
 */
export const make = (options: {
  readonly signed: MediaUrls.MediaUrls["Type"]
  readonly ttlSeconds?: number | undefined
}): Effect.Effect<MediaUrls.MediaUrls["Type"], never, S3Bucket> =>
  Effect.map(S3Bucket, ({ bucket, client, prefix }) => {
    const expiresIn = Math.min(options.ttlSeconds ?? MediaUrls.DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS)
    return {
      urlFor: (key) =>
        MediaUrls.isBlobKey(key)
          ? Effect.flatMap(Effect.clockWith((clock) => clock.currentTimeMillis), (now) =>
            Effect.promise(() =>
              getSignedUrl(client, new GetObjectCommand({ Bucket: bucket, Key: `${prefix}${key}` }), {
                expiresIn,
                // From the Clock, so that tests control the expiry as they do the signed URLs'.
                signingDate: new Date(now)
              })
            ))
          : Effect.dieMessage(`invalid blob key '${key}'`),
      // Uploads stay the instance's own signed URLs: an input reads them from the store.
      signedUrlFor: options.signed.signedUrlFor,
      signedTtlSeconds: options.signed.signedTtlSeconds,
      verify: options.signed.verify,
      classify: options.signed.classify
    }
  })

/** Direct media URLs over the bucket, checking with the signed `MediaUrls` of the layer's input. */
export const layer = (options: { readonly ttlSeconds?: number | undefined } = {}): Layer.Layer<
  MediaUrls.MediaUrls,
  never,
  MediaUrls.MediaUrls | S3Bucket
> =>
  Layer.effect(
    MediaUrls.MediaUrls,
    Effect.flatMap(MediaUrls.MediaUrls, (signed) => make({ signed, ttlSeconds: options.ttlSeconds }))
  )
