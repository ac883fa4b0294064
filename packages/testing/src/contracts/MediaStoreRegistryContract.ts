/**
 * Contract of `MediaStoreRegistry`: a location is recorded once under its id (a second add keeps
 * its first time and takes the new endpoint and region), listed newest first, and forgotten.
 *
 * ```ts
 * MediaStoreRegistryContract.suite("sqlite", () => SqliteStorage.layer({ filename: tempFile() }))
 * ```
 */
import { MediaStoreRegistry } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Layer } from "effect"

/** Builds a fresh registry (a storage layer that provides one). */
export type MakeRegistry = () => Layer.Layer<MediaStoreRegistry.MediaStoreRegistry, unknown>

/** Runs the contract against a fresh registry from `makeRegistry` for every test. */
export const suite = (name: string, makeRegistry: MakeRegistry) =>
  describe(`MediaStoreRegistry contract: ${name}`, () => {
    const location = (uri: string, endpoint: string | null, region: string, addedAt: number) =>
      new MediaStoreRegistry.StoreLocation({
        id: MediaStoreRegistry.idOf(uri, endpoint),
        uri,
        endpoint,
        region,
        addedAt
      })

    it.effect("records each location once, lists them newest first, and forgets one", () =>
      Effect.gen(function*() {
        const registry = yield* MediaStoreRegistry.MediaStoreRegistry
        expect(yield* registry.list).toEqual([])
        const first = location("s3://media/appexec", null, "us-east-1", 1_000)
        const second = location("s3://media", "http://minio.internal:9000", "us-east-1", 2_000)
        yield* registry.add(first)
        yield* registry.add(second)
        expect(yield* registry.list).toEqual([second, first])
        // Recorded again by a later start, in another region: the first time stays.
        yield* registry.add(location("s3://media/appexec", null, "eu-west-1", 3_000))
        expect(yield* registry.list).toEqual([second, location("s3://media/appexec", null, "eu-west-1", 1_000)])
        expect(yield* registry.remove(second.id)).toBe(true)
        expect(yield* registry.remove(second.id)).toBe(false)
        expect((yield* registry.list).map((l) => l.id)).toEqual(["s3://media/appexec"])
      }).pipe(Effect.provide(makeRegistry())))
  })
