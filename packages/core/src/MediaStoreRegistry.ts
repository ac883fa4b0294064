/**
 * Port: the media stores a deployment has written to besides its default one (docs/media.md,
 * *Moving media*). A process that keeps media in a bucket records the bucket here when it starts,
 * in the database every process shares, so that a process started without that bucket (an API
 * not yet restarted, `appexec prune` run with other flags) still reads the media there and
 * deletes them with their execution. A location names where a store is, never its credentials.
 */
import { Context, Effect, Layer, Schema } from "effect"
import type { StorageError } from "./Errors.js"

/** Where a media store is: an S3-compatible bucket and key prefix, and how it is reached. */
export class StoreLocation extends Schema.Class<StoreLocation>("StoreLocation")({
  /** What names the store, unique: its `uri`, and ` at <endpoint>` when it has one. */
  id: Schema.String,
  /** `s3://BUCKET` or `s3://BUCKET/PREFIX`. */
  uri: Schema.String,
  /** The endpoint of an S3-compatible server; null for AWS S3. */
  endpoint: Schema.NullOr(Schema.String),
  /** The region the recording process used. */
  region: Schema.String,
  /** When the store was first recorded (epoch ms). */
  addedAt: Schema.Number
}) {}

/** The id of the store at `uri`, reached at `endpoint` (none: AWS S3). */
export const idOf = (uri: string, endpoint: string | null | undefined): string =>
  endpoint === null || endpoint === undefined ? uri : `${uri} at ${endpoint}`

/** The record of a deployment's media stores. */
export class MediaStoreRegistry extends Context.Tag("@appexec/core/MediaStoreRegistry")<
  MediaStoreRegistry,
  {
    /**
     * Records `location`; one already recorded under its id keeps its `addedAt` and takes the
     * new endpoint and region.
     */
    readonly add: (location: StoreLocation) => Effect.Effect<void, StorageError>
    /** Every recorded location, the most recently added first (then by id). */
    readonly list: Effect.Effect<ReadonlyArray<StoreLocation>, StorageError>
    /** Forgets the location with this id; whether there was one. */
    readonly remove: (id: string) => Effect.Effect<boolean, StorageError>
  }
>() {}

/** A registry in memory (tests, and an embedder with a single store): fresh and empty. */
export const makeMemory = Effect.sync((): MediaStoreRegistry["Type"] => {
  const locations = new Map<string, StoreLocation>()
  return {
    add: (location) =>
      Effect.sync(() => {
        const known = locations.get(location.id)
        locations.set(
          location.id,
          known === undefined ? location : new StoreLocation({ ...location, addedAt: known.addedAt })
        )
      }),
    list: Effect.sync(() => [...locations.values()].sort((a, b) => b.addedAt - a.addedAt || (a.id < b.id ? -1 : 1))),
    remove: (id) => Effect.sync(() => locations.delete(id))
  }
})

/** Layer of a fresh registry in memory. */
export const layerMemory = (): Layer.Layer<MediaStoreRegistry> => Layer.effect(MediaStoreRegistry, makeMemory)
