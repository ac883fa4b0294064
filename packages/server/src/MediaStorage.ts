/**
 * Where the `appexec` command keeps produced media (docs/media.md): by default in the data
 * directory (SQLite) or in the database (PostgreSQL); with `--media s3://BUCKET/PREFIX` in an
 * S3-compatible bucket (`--media-endpoint` for R2, MinIO and the like; region and credentials
 * from the usual AWS variables), which every process of a deployment reads and writes, so that
 * no process needs another's disk. With `--media-direct`, output URLs are presigned GET URLs of
 * the bucket; without, they stay the instance's own signed URLs, served from the bucket.
 *
 * The AWS SDK is loaded only when a bucket is given (a dynamic import of the
 * `@appexec/s3` package, a chunk of its own in the bundled command).
 */
import { Errors, MediaUrls } from "@appexec/core"
import type { S3Bucket } from "@appexec/s3/S3BlobStore"
import { Effect, Either, Layer } from "effect"

/** A bucket and a key prefix in it, as `--media s3://BUCKET/PREFIX` names them. */
export interface Location {
  readonly bucket: string
  /** Key prefix inside the bucket, without slashes at either end (empty: the root). */
  readonly prefix: string
}

/** Media in a bucket. */
export interface S3Media {
  readonly bucket: string
  /** Key prefix inside the bucket, without slashes at either end (empty: the root). */
  readonly prefix: string
  /** The endpoint of an S3-compatible server; absent: AWS S3. */
  readonly endpoint?: string | undefined
  /** Output URLs are presigned bucket URLs instead of the instance's own. */
  readonly direct: boolean
}

/**
 * Says where media go when they go to a bucket (a log line at start, with the AWS SDK's notice
 * on a Node it will stop supporting: `quietSdkNotice`); nothing without one. Only `serve` and
 * `worker` say it: an admin command's output holds its result and nothing else.
 */
export const announce = (media: S3Media | undefined) =>
  media === undefined
    ? Effect.void
    : Effect.logInfo(`Media: ${describe(media)}${media.direct ? " (presigned bucket URLs)" : ""}`).pipe(
      Effect.zipRight(
        operatorNoticeSetting === undefined && Number(process.versions.node.split(".")[0]) < 22
          ? Effect.logWarning(
            `Node ${process.versions.node}: releases of the AWS SDK (used for --media s3://…) published after ` +
              `January 2027 require Node 22 or later (its own notice is off: ${SDK_NOTICE_VARIABLE}=true)`
          )
          : Effect.void
      )
    )

/** `s3://BUCKET/PREFIX` of a bucket, as the operator wrote it. */
export const describe = (media: S3Media) =>
  `s3://${media.bucket}${media.prefix === "" ? "" : `/${media.prefix}`}${
    media.endpoint === undefined ? "" : ` at ${media.endpoint}`
  }`

/**
 * The media of a command from its settings: a bucket, or none for the default store (`direct`
 * absent: `prune`, which hands out no URL). `--media-endpoint` or `--media-direct` without
 * `--media`, and `--media-direct` with `--media-base-url`, are refused.
 */
export const fromSettings = (settings: {
  readonly media: Location | undefined
  readonly mediaEndpoint: string | undefined
  readonly mediaDirect?: boolean | undefined
  readonly mediaBaseUrl?: string | undefined
}): Effect.Effect<S3Media | undefined, Errors.InvalidConfiguration> => {
  const refuse = (setting: string, reason: string) => Effect.fail(new Errors.InvalidConfiguration({ setting, reason }))
  const direct = settings.mediaDirect === true
  if (settings.media === undefined) {
    if (settings.mediaEndpoint !== undefined) {
      return refuse("--media-endpoint", "applies to a bucket: give --media s3://BUCKET/PREFIX too")
    }
    return direct
      ? refuse("--media-direct", "presigns URLs of a bucket: give --media s3://BUCKET/PREFIX too")
      : Effect.succeed(undefined)
  }
  if (direct && settings.mediaBaseUrl !== undefined) {
    return refuse("--media-direct", "media URLs are either presigned bucket URLs or under --media-base-url: give one")
  }
  return Effect.succeed({ ...settings.media, endpoint: settings.mediaEndpoint, direct })
}

/**
 * Reads `s3://BUCKET/PREFIX`: a bucket name as S3 names buckets (3–63 lowercase letters, digits,
 * `.` and `-`), the prefix (optional) a blob key. Left: why not.
 */
export const parseLocation = (location: string): Either.Either<Location, string> => {
  const m = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(location.trim())
  if (m === null) return Either.left(`'${location}' is not an s3://BUCKET/PREFIX location`)
  const bucket = m[1]!
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    return Either.left(`'${bucket}' is not a bucket name (3 to 63 lowercase letters, digits, '.' and '-')`)
  }
  const prefix = (m[2] ?? "").replace(/^\/+|\/+$/g, "")
  if (prefix !== "" && !MediaUrls.isBlobKey(prefix)) {
    return Either.left(`'${prefix}' is not a key prefix (segments of letters, digits, '.', '_' and '-')`)
  }
  return Either.right({ bucket, prefix })
}

/** The variable with which the AWS SDK keeps its notice on Node versions it will stop supporting. */
export const SDK_NOTICE_VARIABLE = "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"

/** The operator's own `AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED`, as the process started with it. */
const operatorNoticeSetting = process.env[SDK_NOTICE_VARIABLE]

/**
 * On Node before 22 the AWS SDK prints a ten-line `NodeVersionSupportWarning` to stderr when its
 * first client is made (`process.emitWarning`), which breaks the one-event-a-line log of `serve`
 * and `worker` and lands in the output of every admin command that reaches a bucket. Unless the
 * operator set `AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED` (either way), the command sets
 * it to `true`, the SDK's documented switch, before it loads the SDK; `serve` and `worker` say the
 * same in one warning of their own log (`announce`), an admin command says nothing.
 */
const quietSdkNotice = Effect.sync(() => {
  if (process.env[SDK_NOTICE_VARIABLE] === undefined) process.env[SDK_NOTICE_VARIABLE] = "true"
})

/** The region of the AWS variables: `AWS_REGION` (or `AWS_DEFAULT_REGION`), else `us-east-1`. */
export const regionOf = (env: Readonly<Record<string, string | undefined>> = process.env): string =>
  env["AWS_REGION"] || env["AWS_DEFAULT_REGION"] || "us-east-1"

/** The S3 store module of `@appexec/s3`, loaded (and with it the AWS SDK) when first needed. */
export const loadS3 = quietSdkNotice.pipe(Effect.zipRight(Effect.promise(() => import("@appexec/s3/S3BlobStore"))))

/**
 * The bucket of `media`, checked at start (`HeadBucket`: a missing bucket or refused credentials
 * stop the command with the bucket's name and the S3 error code), in the region of `regionOf`.
 * Its blob store is `S3BlobStore.make` over it (`MediaStores`).
 */
export const bucketLayer = (
  media: S3Media,
  env: Readonly<Record<string, string | undefined>> = process.env
): Layer.Layer<S3Bucket, Errors.StorageError> =>
  Layer.unwrapEffect(
    Effect.map(loadS3, (S3BlobStore) =>
      S3BlobStore.bucketLayer({
        bucket: media.bucket,
        prefix: media.prefix,
        endpoint: media.endpoint,
        region: regionOf(env),
        check: true
      }))
  )

/** Presigned media URLs of the bucket, checking with the signed `MediaUrls` they are given. */
export const directUrlsLayer: Layer.Layer<MediaUrls.MediaUrls, never, MediaUrls.MediaUrls | S3Bucket> = Layer
  .unwrapEffect(
    Effect.promise(() => import("@appexec/s3/S3MediaUrls")).pipe(
      Effect.map((S3MediaUrls) => S3MediaUrls.layer())
    )
  )
