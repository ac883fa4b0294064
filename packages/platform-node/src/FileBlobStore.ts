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
 * `getRange` reads the asked bytes at their offset, not the whole file. `list` walks the
 * directories one at a time and shows a blob once its metadata is written (the last step of a
 * put); temporary files are never blobs.
 */
import { BlobStore, Errors, MediaUrls } from "@appexec/core"
import { Chunk, Effect, Layer, Option, Schema, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises"
import { dirname, join } from "node:path"

const Meta = Schema.parseJson(Schema.Struct({ contentType: Schema.String, size: Schema.Number }))
const decodeMeta = Schema.decodeUnknown(Meta)

const isMissing = (error: unknown) =>
  typeof error === "object" && error !== null && "code" in error && error.code === "ENOENT"

/** The name of a file being written (`atomicWrite`), never a blob. */
const TEMPORARY = /\.[0-9a-f]{12}\.tmp$/

const atomicWrite = async (path: string, data: Uint8Array | string) => {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 })
  const temp = `${path}.${randomBytes(6).toString("hex")}.tmp`
  // Readable by the service's user only, like everything in its data directory.
  await writeFile(temp, data, { mode: 0o600 })
  await rename(temp, path)
}

const readIfPresent = <A>(path: string, read: (path: string) => Promise<A>) =>
  read(path).catch((error: unknown) => (isMissing(error) ? undefined : Promise.reject(error)))

/**
 * The blobs of one directory of the store (relative path `under`, "" for the root) and its
 * subdirectories, so that a listing reads one directory at a time.
 */
const readDirectory = async (directory: string, under: string) => {
  const entries = await readdir(join(directory, under), { withFileTypes: true }).catch((error: unknown) =>
    isMissing(error) ? [] : Promise.reject(error)
  )
  const blobs: Array<BlobStore.BlobEntry> = []
  const directories: Array<string> = []
  for (const entry of entries) {
    const key = under === "" ? entry.name : `${under}/${entry.name}`
    // `.meta` holds the types, and no blob key starts with a dot.
    if (!MediaUrls.isBlobKey(key)) continue
    if (entry.isDirectory()) directories.push(key)
    else if (entry.isFile() && !TEMPORARY.test(entry.name)) {
      const data = await readIfPresent(join(directory, key), (p) => stat(p))
      const meta = await readIfPresent(join(directory, ".meta", `${key}.json`), (p) => stat(p))
      if (data !== undefined && meta !== undefined) {
        blobs.push({ key, size: data.size, modifiedAt: Math.max(data.mtimeMs, meta.mtimeMs) })
      }
    }
  }
  return { blobs, directories }
}

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
        ),
    list: (prefix) => {
      // The deepest directory that holds every key with the prefix; the keys are filtered below it.
      const start = prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/")) : ""
      if (start !== "" && !MediaUrls.isBlobKey(start)) return Stream.empty
      return Stream.paginateChunkEffect([start], (pending: ReadonlyArray<string>) =>
        Effect.tryPromise({
          try: async () => {
            const [under, ...rest] = pending
            const { blobs, directories } = await readDirectory(directory, under ?? "")
            const next = [
              ...directories.filter((d) => `${d}/`.startsWith(prefix) || prefix.startsWith(`${d}/`)),
              ...rest
            ]
            return [
              Chunk.fromIterable(blobs.filter((blob) => blob.key.startsWith(prefix))),
              next.length === 0 ? Option.none() : Option.some(next)
            ] as const
          },
          catch: (cause) => new Errors.StorageError({ operation: "BlobStore.list", cause })
        }))
    },
    deleteKeys: (keys) =>
      Effect.forEach(keys, (key) =>
        Effect.flatMap(pathsOf(key), (paths) =>
          Effect.tryPromise({
            try: async () => {
              // The bytes first: stopped in between, what stays is a little metadata that reads and
              // lists as no blob (and goes with its execution's directory), never bytes no listing shows.
              await rm(paths.data, { force: true })
              await rm(paths.meta, { force: true })
            },
            catch: (cause) => new Errors.StorageError({ operation: "BlobStore.deleteKeys", cause })
          })), { discard: true })
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
