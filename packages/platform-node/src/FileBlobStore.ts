/**
 * Filesystem `BlobStore`: the default under the server's `--data` directory.
 *
 * The blob under key `executions/<id>/poster.png` is the file `<directory>/executions/<id>/poster.png`,
 * so the directory can be published as it is — by a static file server or by syncing it to a
 * bucket — for a public media base URL (`--media-base-url`). Its content type is kept beside it,
 * in `<directory>/.meta/<key>.json`. Keys must be blob keys (`MediaUrls.isBlobKey`: segments of
 * letters, digits, `.`, `_` and `-`, each starting with a letter or digit), so no key reaches
 * outside the directory or into `.meta`. Files are written to a temporary name and renamed,
 * bytes first, so a reader never sees a half-written blob. `stat` reads the metadata and the
 * file's inode and modification time (its version: a put renames a new file over it);
 * `getRange` reads the asked bytes at their offset, not the whole file.
 */
import { BlobStore, Errors, MediaUrls } from "@appexec/core"
import { Effect, Layer, Option, Schema } from "effect"
import { randomBytes } from "node:crypto"
import { mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises"
import { dirname, join } from "node:path"

const Meta = Schema.parseJson(Schema.Struct({ contentType: Schema.String, size: Schema.Number }))
const decodeMeta = Schema.decodeUnknown(Meta)

const isMissing = (error: unknown) =>
  typeof error === "object" && error !== null && "code" in error && error.code === "ENOENT"

const atomicWrite = async (path: string, data: Uint8Array | string) => {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 })
  const temp = `${path}.${randomBytes(6).toString("hex")}.tmp`
  // Readable by the service's user only, like everything in its data directory.
  await writeFile(temp, data, { mode: 0o600 })
  await rename(temp, path)
}

const readIfPresent = <A>(path: string, read: (path: string) => Promise<A>) =>
  read(path).catch((error: unknown) => (isMissing(error) ? undefined : Promise.reject(error)))

/** A blob store in `directory` (directories are created as needed). */
export const make = (directory: string): BlobStore.BlobStore["Type"] => {
  const pathsOf = (key: string) =>
    MediaUrls.isBlobKey(key)
      ? Effect.succeed({ data: join(directory, key), meta: join(directory, ".meta", `${key}.json`) })
      : Effect.fail(new Errors.StorageError({ operation: "BlobStore", cause: `not a blob key: '${key.slice(0, 80)}'` }))
  return {
    put: (key, blob) =>
      Effect.flatMap(pathsOf(key), (paths) =>
        Effect.tryPromise({
          try: async () => {
            await atomicWrite(paths.data, blob.bytes)
            await atomicWrite(paths.meta, JSON.stringify({ contentType: blob.contentType, size: blob.bytes.length }))
          },
          catch: (cause) => new Errors.StorageError({ operation: "BlobStore.put", cause })
        })),
    get: (key) =>
      Effect.gen(function*() {
        const paths = yield* pathsOf(key)
        const read = yield* Effect.tryPromise({
          try: async () => {
            const meta = await readIfPresent(paths.meta, (p) => readFile(p, "utf8"))
            const bytes = meta === undefined ? undefined : await readIfPresent(paths.data, (p) => readFile(p))
            return meta === undefined || bytes === undefined ? undefined : { meta, bytes }
          },
          catch: (cause) => new Errors.StorageError({ operation: "BlobStore.get", cause })
        })
        if (read === undefined) return Option.none()
        const meta = yield* decodeMeta(read.meta).pipe(
          Effect.mapError((cause) => new Errors.StorageError({ operation: "BlobStore.get", cause }))
        )
        return Option.some({ contentType: meta.contentType, bytes: new Uint8Array(read.bytes) })
      }),
    stat: (key) =>
      Effect.gen(function*() {
        const paths = yield* pathsOf(key)
        const read = yield* Effect.tryPromise({
          try: async () => {
            const meta = await readIfPresent(paths.meta, (p) => readFile(p, "utf8"))
            const info = meta === undefined
              ? undefined
              : await readIfPresent(paths.data, (p) => stat(p, { bigint: true }))
            return meta === undefined || info === undefined ? undefined : { meta, info }
          },
          catch: (cause) => new Errors.StorageError({ operation: "BlobStore.stat", cause })
        })
        if (read === undefined) return Option.none()
        const meta = yield* decodeMeta(read.meta).pipe(
          Effect.mapError((cause) => new Errors.StorageError({ operation: "BlobStore.stat", cause }))
        )
        return Option.some({
          contentType: meta.contentType,
          size: Number(read.info.size),
          version: `${read.info.ino.toString(36)}-${read.info.mtimeNs.toString(36)}`
        })
      }),
    getRange: (key, start, endInclusive) =>
      Effect.flatMap(pathsOf(key), (paths) =>
        Effect.tryPromise({
          try: async () => {
            const file = await readIfPresent(paths.data, (p) => open(p, "r"))
            if (file === undefined) return Option.none()
            try {
              const size = (await file.stat()).size
              const length = Math.max(0, Math.min(endInclusive + 1, size) - start)
              const bytes = new Uint8Array(length)
              let read = 0
              while (read < length) {
                const { bytesRead } = await file.read(bytes, read, length - read, start + read)
                if (bytesRead === 0) break
                read += bytesRead
              }
              return Option.some(bytes.subarray(0, read))
            } finally {
              await file.close()
            }
          },
          catch: (cause) => new Errors.StorageError({ operation: "BlobStore.getRange", cause })
        })),
    // Keys are paths: a prefix ending in `/` is a directory, removed with what is under it.
    deleteUnder: (prefix) =>
      prefix.endsWith("/") && MediaUrls.isBlobKey(prefix.slice(0, -1))
        ? Effect.tryPromise({
          try: async () => {
            await rm(join(directory, prefix), { recursive: true, force: true })
            await rm(join(directory, ".meta", prefix), { recursive: true, force: true })
          },
          catch: (cause) => new Errors.StorageError({ operation: "BlobStore.deleteUnder", cause })
        })
        : Effect.fail(
          new Errors.StorageError({
            operation: "BlobStore.deleteUnder",
            cause: `not a key prefix ending in '/': '${prefix.slice(0, 80)}'`
          })
        )
  }
}

/** Layer of a blob store in `directory`, created when missing. */
export const layer = (directory: string): Layer.Layer<BlobStore.BlobStore, Errors.StorageError> =>
  Layer.effect(
    BlobStore.BlobStore,
    Effect.tryPromise({
      try: () => mkdir(directory, { recursive: true, mode: 0o700 }),
      catch: (cause) => new Errors.StorageError({ operation: "BlobStore.open", cause })
    }).pipe(Effect.as(make(directory)))
  )
