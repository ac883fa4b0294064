/**
 * Filesystem `BlobStore`: the default under the server's `--data` directory. A blob is two
 * files named by the SHA-256 of its key (so no key can reach outside the directory): the bytes,
 * and a small JSON record with the key and content type. Both are written to a temporary file
 * and renamed, bytes first, so a reader never sees a half-written blob.
 */
import { BlobStore, Errors } from "@appexec/core"
import { createHash, randomBytes } from "node:crypto"
import { mkdir, readFile, rename, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Effect, Layer, Option, Schema } from "effect"

const Meta = Schema.parseJson(Schema.Struct({ key: Schema.String, contentType: Schema.String, size: Schema.Number }))

const isMissing = (error: unknown) =>
  typeof error === "object" && error !== null && "code" in error && (error as { readonly code: unknown }).code === "ENOENT"

const atomicWrite = async (path: string, data: Uint8Array | string) => {
  const temp = `${path}.${randomBytes(6).toString("hex")}.tmp`
  await writeFile(temp, data)
  await rename(temp, path)
}

/** A blob store in `directory` (created when missing). */
export const make = (directory: string): BlobStore.BlobStore["Type"] => {
  const pathsOf = (key: string) => {
    const hash = createHash("sha256").update(key).digest("hex")
    const dir = join(directory, hash.slice(0, 2))
    return { dir, data: join(dir, `${hash}.bin`), meta: join(dir, `${hash}.json`) }
  }
  return {
    put: (key, blob) =>
      Effect.tryPromise({
        try: async () => {
          const paths = pathsOf(key)
          await mkdir(paths.dir, { recursive: true })
          await atomicWrite(paths.data, blob.bytes)
          await atomicWrite(paths.meta, JSON.stringify({ key, contentType: blob.contentType, size: blob.bytes.length }))
        },
        catch: (cause) => new Errors.StorageError({ operation: "BlobStore.put", cause })
      }),
    get: (key) =>
      Effect.tryPromise({
        try: async () => {
          const paths = pathsOf(key)
          const meta = await readFile(paths.meta, "utf8").catch((error: unknown) => (isMissing(error) ? undefined : Promise.reject(error)))
          if (meta === undefined) return Option.none<BlobStore.Blob>()
          const record = Schema.decodeUnknownSync(Meta)(meta)
          if (record.key !== key) return Option.none<BlobStore.Blob>()
          const bytes = await readFile(paths.data)
          return Option.some<BlobStore.Blob>({ contentType: record.contentType, bytes: new Uint8Array(bytes) })
        },
        catch: (cause) => new Errors.StorageError({ operation: "BlobStore.get", cause })
      })
  }
}

/** Layer of a blob store in `directory`, created when missing. */
export const layer = (directory: string): Layer.Layer<BlobStore.BlobStore, Errors.StorageError> =>
  Layer.effect(
    BlobStore.BlobStore,
    Effect.tryPromise({
      try: () => mkdir(directory, { recursive: true }),
      catch: (cause) => new Errors.StorageError({ operation: "BlobStore.open", cause })
    }).pipe(Effect.as(make(directory)))
  )
