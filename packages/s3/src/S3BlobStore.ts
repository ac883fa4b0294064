/**
 * `BlobStore` on an S3-compatible bucket (AWS S3, Cloudflare R2, MinIO, …), with
 * `@aws-sdk/client-s3`. The blob under key `executions/<id>/poster.png` is the object
 * `<prefix>/executions/<id>/poster.png` of the bucket, its content type the object's
 * `Content-Type`. Region and credentials come from the SDK's default chain (`AWS_REGION`,
 * `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, profiles, instance roles)
 * unless given. Checksums are sent and checked only where the S3 API requires them
 * (`WHEN_REQUIRED`): R2 and MinIO refuse the SDK's default CRC32 headers (aws-sdk-js-v3 #6810).
 *
 * Every SDK failure becomes a `StorageError` whose operation names the S3 call, the bucket and
 * the S3 error code (`S3 PutObject on bucket 'media': NoSuchBucket`); credentials never appear.
 * `deleteUnder` lists the prefix a page (1000 keys) at a time and deletes each page with one
 * `DeleteObjects`, until the list is empty. `stat` is a `HeadObject` (the version is the
 * object's ETag) and `getRange` a `GetObject` with a `Range` header, so a seek in a video reads
 * only the asked bytes from the bucket. `list` reads a page of 1000 objects at a time (their
 * `LastModified`, to the second, is the modification time) and `deleteKeys` deletes 1000 with
 * one `DeleteObjects`. The module is a subpath of its own (`@appexec/s3/S3BlobStore`),
 * so that processes without a bucket never load the SDK.
 */
import { BlobStore, Errors, MediaUrls } from "@appexec/core"
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig
} from "@aws-sdk/client-s3"
import { Chunk, Context, Effect, Layer, Option, Stream } from "effect"

/** Where the blobs go and how the bucket is reached. */
export interface Options {
  readonly bucket: string
  /** Key prefix inside the bucket, without leading or trailing `/` (empty: the bucket's root). */
  readonly prefix?: string | undefined
  /** The endpoint of an S3-compatible server (`https://ACCOUNT_ID.r2.cloudflarestorage.com`, `http://minio:9000`); absent: AWS S3. */
  readonly endpoint?: string | undefined
  /** Path-style URLs (`<endpoint>/<bucket>/<key>`), as most S3-compatible servers want; default: when an endpoint is given. */
  readonly forcePathStyle?: boolean | undefined
  /** The region; absent: the SDK's chain (`AWS_REGION`). */
  readonly region?: string | undefined
  /** Credentials; absent: the SDK's default chain. */
  readonly credentials?: S3ClientConfig["credentials"]
  /** Longest wait for a connection (default 5 s). */
  readonly connectionTimeoutMs?: number | undefined
  /** Longest a request may go without progress (default 60 s). */
  readonly requestTimeoutMs?: number | undefined
}

/** The bucket of a store: its client, name and key prefix (shared with presigned media URLs). */
export class S3Bucket extends Context.Tag("@appexec/platform-node/S3Bucket")<
  S3Bucket,
  {
    readonly client: S3Client
    readonly bucket: string
    /** The prefix with its trailing `/`, or empty. */
    readonly prefix: string
  }
>() {}

/** Longest object list (and batch delete) S3 answers in one call. */
const PAGE = 1000

/** The S3 client of `options`: checksums only where required, bounded times, path style for endpoints. */
export const makeClient = (options: Options): S3Client =>
  new S3Client({
    ...(options.region === undefined ? {} : { region: options.region }),
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    forcePathStyle: options.forcePathStyle ?? options.endpoint !== undefined,
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    requestHandler: {
      connectionTimeout: options.connectionTimeoutMs ?? 5_000,
      requestTimeout: options.requestTimeoutMs ?? 60_000
    }
  })

/** The S3 error code of an SDK failure (`NoSuchBucket`, `AccessDenied`, …), or what it is when it has none. */
const codeOf = (cause: unknown): string => {
  if (typeof cause !== "object" || cause === null) return String(cause)
  const named = "name" in cause && typeof cause.name === "string" ? cause.name : "Error"
  const status = "$metadata" in cause && typeof cause.$metadata === "object" && cause.$metadata !== null &&
      "httpStatusCode" in cause.$metadata
    ? cause.$metadata.httpStatusCode
    : undefined
  // A bodiless answer (HEAD) leaves the SDK's placeholder, which says nothing.
  const message = "message" in cause && typeof cause.message === "string" && cause.message !== named &&
      cause.message !== "UnknownError"
    ? ` (${cause.message.slice(0, 200)})`
    : ""
  return `${named}${status === undefined ? "" : `, HTTP ${String(status)}`}${message}`
}

const isNoSuchKey = (cause: unknown) =>
  typeof cause === "object" && cause !== null && "name" in cause &&
  (cause.name === "NoSuchKey" || cause.name === "NotFound")

/** S3 answers a range that starts past the object's end with 416 `InvalidRange`. */
const isInvalidRange = (cause: unknown) =>
  typeof cause === "object" && cause !== null &&
  (("name" in cause && cause.name === "InvalidRange") ||
    ("$metadata" in cause && typeof cause.$metadata === "object" && cause.$metadata !== null &&
      "httpStatusCode" in cause.$metadata && cause.$metadata.httpStatusCode === 416))

const failure = (bucket: string, call: string, cause: unknown) =>
  new Errors.StorageError({ operation: `S3 ${call} on bucket '${bucket}': ${codeOf(cause)}`, cause })

/** The blob store over the bucket of the context. */
export const make: Effect.Effect<BlobStore.BlobStore["Type"], never, S3Bucket> = Effect.map(
  S3Bucket,
  ({ bucket, client, prefix }) => {
    const send = <A>(call: string, run: (signal: AbortSignal) => Promise<A>) =>
      Effect.tryPromise({ try: run, catch: (cause) => failure(bucket, call, cause) })
    const objectKey = (key: string) =>
      MediaUrls.isBlobKey(key)
        ? Effect.succeed(`${prefix}${key}`)
        : Effect.fail(
          new Errors.StorageError({ operation: "BlobStore", cause: `not a blob key: '${key.slice(0, 80)}'` })
        )

    const deletePage = (keys: ReadonlyArray<string>) =>
      send("DeleteObjects", (abortSignal) =>
        client.send(
          new DeleteObjectsCommand({
            Bucket: bucket,
            Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true }
          }),
          { abortSignal }
        )).pipe(
          Effect.flatMap((answer) => {
            const first = answer.Errors?.[0]
            return first === undefined
              ? Effect.void
              : Effect.fail(
                new Errors.StorageError({
                  operation: `S3 DeleteObjects on bucket '${bucket}': ${first.Code ?? "Error"} (${
                    answer.Errors!.length
                  } of ${keys.length} not deleted, the first '${first.Key ?? ""}')`,
                  cause: first.Message ?? first.Code
                })
              )
          })
        )

    const service: BlobStore.BlobStore["Type"] = {
      put: Effect.fn("S3BlobStore.put")(function*(key, blob) {
        const Key = yield* objectKey(key)
        yield* send("PutObject", (abortSignal) =>
          client.send(
            new PutObjectCommand({
              Bucket: bucket,
              Key,
              // A copy: the SDK may read the body after the caller changed its buffer.
              Body: Uint8Array.from(blob.bytes),
              ContentType: blob.contentType,
              ContentLength: blob.bytes.length
            }),
            { abortSignal }
          ))
      }),
      get: Effect.fn("S3BlobStore.get")(function*(key) {
        const Key = yield* objectKey(key)
        return yield* send("GetObject", async (abortSignal) => {
          try {
            const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key }), { abortSignal })
            const bytes = answer.Body === undefined ? new Uint8Array(0) : await answer.Body.transformToByteArray()
            return Option.some({ contentType: answer.ContentType ?? "application/octet-stream", bytes })
          } catch (cause) {
            if (isNoSuchKey(cause)) return Option.none()
            throw cause
          }
        })
      }),
      stat: Effect.fn("S3BlobStore.stat")(function*(key) {
        const Key = yield* objectKey(key)
        return yield* send("HeadObject", async (abortSignal) => {
          try {
            const answer = await client.send(new HeadObjectCommand({ Bucket: bucket, Key }), { abortSignal })
            return Option.some({
              contentType: answer.ContentType ?? "application/octet-stream",
              size: answer.ContentLength ?? 0,
              version: answer.ETag ?? answer.LastModified?.toISOString() ?? ""
            })
          } catch (cause) {
            if (isNoSuchKey(cause)) return Option.none()
            throw cause
          }
        })
      }),
      getRange: Effect.fn("S3BlobStore.getRange")(function*(key, start, endInclusive) {
        const Key = yield* objectKey(key)
        if (endInclusive < start) {
          // No bytes asked: S3 would ignore such a Range and answer the whole object.
          return yield* Effect.map(service.stat!(key), Option.map(() => new Uint8Array(0)))
        }
        return yield* send("GetObject", async (abortSignal) => {
          try {
            const answer = await client.send(
              new GetObjectCommand({ Bucket: bucket, Key, Range: `bytes=${start}-${endInclusive}` }),
              { abortSignal }
            )
            const bytes = answer.Body === undefined ? new Uint8Array(0) : await answer.Body.transformToByteArray()
            // A server that ignores the Range answers the whole object (no Content-Range); one
            // that misreads `bytes=N-0` (s3rver) more than asked: keep the asked bytes only.
            const wanted = endInclusive - start + 1
            if (answer.ContentRange === undefined) return Option.some(bytes.subarray(start, endInclusive + 1))
            return Option.some(bytes.length > wanted ? bytes.subarray(0, wanted) : bytes)
          } catch (cause) {
            if (isNoSuchKey(cause)) return Option.none()
            if (isInvalidRange(cause)) return Option.some(new Uint8Array(0))
            throw cause
          }
        })
      }),
      list: (under) =>
        Stream.paginateChunkEffect(Option.none<string>(), (token) =>
          send("ListObjectsV2", (abortSignal) =>
            client.send(
              new ListObjectsV2Command({
                Bucket: bucket,
                Prefix: `${prefix}${under}`,
                MaxKeys: PAGE,
                ...(Option.isSome(token) ? { ContinuationToken: token.value } : {})
              }),
              { abortSignal }
            )).pipe(
              Effect.map((page) => {
                const entries = (page.Contents ?? []).flatMap((object) => {
                  const key = object.Key?.slice(prefix.length)
                  // Objects of the bucket that are not blobs of this store (another tool's keys) are left out.
                  return key === undefined || object.Key?.startsWith(prefix) !== true || !MediaUrls.isBlobKey(key)
                    ? []
                    : [{ key, size: object.Size ?? 0, modifiedAt: object.LastModified?.getTime() ?? 0 }]
                })
                const next = page.IsTruncated === true && page.NextContinuationToken !== undefined
                  ? Option.some(Option.some(page.NextContinuationToken))
                  : Option.none()
                return [Chunk.fromIterable(entries), next] as const
              })
            )),
      deleteKeys: Effect.fn("S3BlobStore.deleteKeys")(function*(keys) {
        const objects: Array<string> = []
        for (const key of keys) objects.push(yield* objectKey(key))
        for (let i = 0; i < objects.length; i += PAGE) yield* deletePage(objects.slice(i, i + PAGE))
      }),
      deleteUnder: Effect.fn("S3BlobStore.deleteUnder")(function*(under) {
        if (!under.endsWith("/") || !MediaUrls.isBlobKey(under.slice(0, -1))) {
          return yield* new Errors.StorageError({
            operation: "BlobStore.deleteUnder",
            cause: `not a key prefix ending in '/': '${under.slice(0, 80)}'`
          })
        }
        // What is deleted is gone from the next list (S3 lists consistently): list the first page
        // again until none is left (no continuation token to carry between deletions).
        let deleted = new Set<string>()
        while (true) {
          const page = yield* send("ListObjectsV2", (abortSignal) =>
            client.send(
              new ListObjectsV2Command({ Bucket: bucket, Prefix: `${prefix}${under}`, MaxKeys: PAGE }),
              { abortSignal }
            ))
          const keys = (page.Contents ?? []).flatMap((object) => (object.Key === undefined ? [] : [object.Key]))
          if (keys.length === 0) return
          if (keys.some((key) => deleted.has(key))) {
            return yield* new Errors.StorageError({
              operation:
                `S3 DeleteObjects on bucket '${bucket}': objects under '${prefix}${under}' remain after deletion`,
              cause: keys[0]
            })
          }
          yield* deletePage(keys)
          if (page.IsTruncated !== true) return
          deleted = new Set(keys)
        }
      })
    }
    return service
  }
)

/**
 * The bucket of `options` (a client closed with the layer). With `check`, the bucket is reached
 * once (`HeadBucket`) and a bucket that is missing or refused fails the layer with a clear error.
 */
export const bucketLayer = (
  options: Options & { readonly check?: boolean | undefined }
): Layer.Layer<S3Bucket, Errors.StorageError> =>
  Layer.scoped(
    S3Bucket,
    Effect.gen(function*() {
      const client = yield* Effect.acquireRelease(
        Effect.sync(() => makeClient(options)),
        (client) => Effect.sync(() => client.destroy())
      )
      if (options.check === true) {
        yield* Effect.tryPromise({
          try: (abortSignal) => client.send(new HeadBucketCommand({ Bucket: options.bucket }), { abortSignal }),
          catch: (cause) => failure(options.bucket, "HeadBucket", cause)
        })
      }
      const prefix = (options.prefix ?? "").replace(/^\/+|\/+$/g, "")
      return { client, bucket: options.bucket, prefix: prefix === "" ? "" : `${prefix}/` }
    })
  )

/** The blob store in the bucket of `options`, and the bucket (see `bucketLayer`). */
export const layer = (
  options: Options & { readonly check?: boolean | undefined }
): Layer.Layer<BlobStore.BlobStore | S3Bucket, Errors.StorageError> =>
  Layer.effect(BlobStore.BlobStore, make).pipe(Layer.provideMerge(bucketLayer(options)))
