/**
 * The media stores of a process of the `appexec` command (docs/media.md, *Moving media*). Its own
 * store takes new media: the bucket of `--media s3://…`, else the default store (the data
 * directory on SQLite, the database on PostgreSQL). Every other store the deployment kept media
 * in is read too, and deleted from with its executions: the default store when the process has a
 * bucket, and each bucket another process recorded in the database (`MediaStoreRegistry`), which
 * a process with `--media` does when it starts. So a URL handed out before the move to a bucket
 * keeps answering, a process not yet given the bucket answers what the others put there, and
 * `prune` deletes an execution's media wherever they are, whatever flags it was given. A
 * recorded bucket is reached with this process's AWS credentials, in the region the recording
 * process used; its client is made when first needed and kept.
 */
import { BlobStore, CombinedBlobStore, type Errors, MediaStoreRegistry } from "@appexec/core"
import type { S3Bucket } from "@appexec/s3/S3BlobStore"
import { Clock, Context, Effect, Either, Layer, Option, type Scope } from "effect"
import * as MediaStorage from "./MediaStorage.js"

/** The id of the default store among the members. */
export const DEFAULT_ID = "default"

/** The location of the bucket of `media`, recorded by `now` (epoch ms) in `region`. */
export const locationOf = (media: MediaStorage.S3Media, region: string, now: number) => {
  const uri = `s3://${media.bucket}${media.prefix === "" ? "" : `/${media.prefix}`}`
  return new MediaStoreRegistry.StoreLocation({
    id: MediaStoreRegistry.idOf(uri, media.endpoint),
    uri,
    endpoint: media.endpoint ?? null,
    region,
    addedAt: now
  })
}

/** The blob store of a recorded location, its client closed with `scope`. */
const open = (location: MediaStoreRegistry.StoreLocation, scope: Scope.Scope) =>
  Effect.gen(function*() {
    const place = yield* Either.match(MediaStorage.parseLocation(location.uri), {
      onLeft: (why) => Effect.dieMessage(`recorded media store '${location.id}': ${why}`),
      onRight: Effect.succeed
    })
    const S3BlobStore = yield* MediaStorage.loadS3
    const context = yield* Layer.buildWithScope(
      S3BlobStore.layer({
        bucket: place.bucket,
        prefix: place.prefix,
        endpoint: location.endpoint ?? undefined,
        region: location.region
      }),
      scope
    )
    yield* Effect.logInfo(`media: also reading ${location.id}, where another process kept media`)
    return { id: location.id, store: Context.get(context, BlobStore.BlobStore) } satisfies CombinedBlobStore.Member
  })

/**
 * The members of the combined store: the bucket of `media` first (its `S3Bucket` provided with
 * it, as `MediaStorage.bucketLayer` makes it; recorded in the registry) or the default store, then
 * the others. Needs the default `BlobStore` and the registry.
 */
export const membersLayer = (
  media: MediaStorage.S3Media | undefined
): Layer.Layer<
  CombinedBlobStore.Members,
  Errors.StorageError,
  BlobStore.BlobStore | MediaStoreRegistry.MediaStoreRegistry
> =>
  Layer.scoped(
    CombinedBlobStore.Members,
    Effect.gen(function*() {
      const fallback: CombinedBlobStore.Member = { id: DEFAULT_ID, store: yield* BlobStore.BlobStore }
      const registry = yield* MediaStoreRegistry.MediaStoreRegistry
      const scope = yield* Effect.scope
      let primary = fallback
      if (media !== undefined) {
        const S3BlobStore = yield* MediaStorage.loadS3
        const bucket = yield* Effect.serviceOption(S3BlobStore.S3Bucket)
        if (Option.isNone(bucket)) return yield* Effect.dieMessage("the bucket of --media is not provided")
        const store = yield* S3BlobStore.make.pipe(Effect.provideService(S3BlobStore.S3Bucket, bucket.value))
        const location = locationOf(media, MediaStorage.regionOf(), yield* Clock.currentTimeMillis)
        yield* registry.add(location)
        primary = { id: location.id, store }
      }
      // Each recorded store is opened once, when a read or a delete first needs it.
      const opened = new Map<string, CombinedBlobStore.Member>()
      const lock = yield* Effect.makeSemaphore(1)
      const memberOf = (location: MediaStoreRegistry.StoreLocation) =>
        lock.withPermits(1)(Effect.suspend(() => {
          const known = opened.get(location.id)
          return known !== undefined
            ? Effect.succeed(known)
            : Effect.tap(open(location, scope), (member) => opened.set(location.id, member))
        }))
      const others = Effect.gen(function*() {
        const members: Array<CombinedBlobStore.Member> = primary === fallback ? [] : [fallback]
        for (const location of yield* registry.list) {
          if (location.id !== primary.id) members.push(yield* memberOf(location))
        }
        return members
      })
      return { primary, others }
    })
  )

/**
 * The combined `BlobStore` of the process (and its `Members`, for the `appexec media` commands)
 * over `storage`, whose own blob store is the default one; `bucket` is the `S3Bucket` of `media`
 * (the same layer that direct media URLs are given, so that the bucket is reached by one client).
 */
export const layer = <ROut, E>(
  storage: Layer.Layer<ROut | BlobStore.BlobStore | MediaStoreRegistry.MediaStoreRegistry, E>,
  media: MediaStorage.S3Media | undefined,
  bucket: Layer.Layer<S3Bucket, Errors.StorageError> | undefined
) =>
  CombinedBlobStore.layer.pipe(
    Layer.provideMerge(
      bucket === undefined ? membersLayer(undefined) : membersLayer(media).pipe(Layer.provide(bucket))
    ),
    Layer.provideMerge(storage)
  )
