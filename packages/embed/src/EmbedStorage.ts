/**
 * Where an embedded instance keeps its data, chosen with one option: a SQLite file (the default,
 * `.appexec/appexec.db` under the working directory, its folder created), a PostgreSQL database
 * (`@appexec/postgres`, loaded only then, and installed by the host), or memory (tests). With it
 * come the key of the signed media URLs and the master key that seals secrets.
 *
 * The SQLite layout is the `appexec` command's data directory (`--data`): beside the database,
 * `master.key` (the master key, unless one is given), `media.secret` (the media URL key) and
 * `media/` (produced media and uploads), so the command's admin commands work on an embedded
 * instance's folder.
 */
import type * as AppexecLayer from "@appexec/core/AppexecLayer"
import type * as Errors from "@appexec/core/Errors"
import * as MediaUrls from "@appexec/core/MediaUrls"
import * as SecretSealing from "@appexec/core/SecretSealing"
import * as FileBlobStore from "@appexec/platform-node/FileBlobStore"
import * as SqliteStorage from "@appexec/sqlite/SqliteStorage"
import { Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { ConfigurationError } from "./AppexecError.js"

/** Where the data lives: a SQLite file, a PostgreSQL database (its URL), or memory (gone with the instance). */
export type StorageOption =
  | { readonly sqlite: string }
  | { readonly postgres: string }
  | { readonly memory: true }

/** The default: a SQLite file under the working directory, as the `appexec` command's default data directory. */
export const DEFAULT_SQLITE_FILE = ".appexec/appexec.db"

/** The storage of an instance, ready to be built. */
export interface Storage {
  /** Every storage port, and the signed media URLs of the instance under `baseUrl`. */
  readonly layer: Layer.Layer<
    AppexecLayer.Storage | MediaUrls.MediaUrls,
    Errors.StorageError | Errors.InvalidConfiguration
  >
  /** The master key that seals secrets: the one given, else the storage's own (none on PostgreSQL). */
  readonly masterKey: Redacted.Redacted<Uint8Array> | undefined
  /** Where the data is, for the log: a file, `memory`, or the database's host. */
  readonly where: string
}

/** 32 random bytes in `file` (mode 0600), made on first use: the media URL key of a SQLite folder. */
const secretFile = (file: string): Redacted.Redacted<Uint8Array> => {
  if (!existsSync(file)) writeFileSync(file, randomBytes(32), { mode: 0o600, flag: "wx" })
  return Redacted.make(new Uint8Array(readFileSync(file)))
}

/** The master key of a SQLite folder: `master.key` (base64url, as the `appexec` command writes it), made on first use. */
const masterKeyFile = (file: string): Redacted.Redacted<Uint8Array> => {
  if (!existsSync(file)) {
    const key = SecretSealing.formatMasterKey(Redacted.make(new Uint8Array(randomBytes(32))))
    writeFileSync(file, `${key}\n`, { mode: 0o600, flag: "wx" })
  }
  chmodSync(file, 0o600)
  const key = SecretSealing.parseMasterKey(readFileSync(file, "utf8"))
  if (key === undefined) {
    throw new ConfigurationError("masterKey", `${file} does not hold a master key (32 bytes as base64url)`)
  }
  return key
}

/** The master key given as text (32 bytes as base64url, base64 or hex). */
const givenKey = (text: string | undefined): Redacted.Redacted<Uint8Array> | undefined => {
  if (text === undefined) return undefined
  const key = SecretSealing.parseMasterKey(text)
  if (key === undefined) {
    throw new ConfigurationError("masterKey", "masterKey must be 32 bytes as base64url, base64 or hex")
  }
  return key
}

const signedUrls = (baseUrl: string, secret: Redacted.Redacted<Uint8Array>) =>
  MediaUrls.layer({ mode: "signed", baseUrl, secret })

/** The PostgreSQL package, loaded when asked for; a host without it is told how to get it. */
const loadPostgres = () =>
  import("@appexec/postgres").catch((error: unknown) => {
    const missing = error instanceof Error && "code" in error && error.code === "ERR_MODULE_NOT_FOUND" &&
      error.message.includes("'@appexec/postgres'")
    throw missing
      ? new ConfigurationError(
        "storage",
        "PostgreSQL storage needs the @appexec/postgres package, which is not installed: npm install @appexec/postgres",
        error
      )
      : error
  })

/**
 * The storage of `option` (default: the SQLite file `DEFAULT_SQLITE_FILE`), its media URLs under
 * `baseUrl`, and the master key (`masterKey` when given). Throws a `ConfigurationError` for what
 * cannot work: a master key that is not one, PostgreSQL without its package.
 */
export const make = async (
  option: StorageOption | undefined,
  options: { readonly baseUrl: string; readonly masterKey?: string | undefined }
): Promise<Storage> => {
  const given = givenKey(options.masterKey)
  const chosen = option ?? { sqlite: DEFAULT_SQLITE_FILE }
  if ("memory" in chosen) {
    return {
      layer: Layer.merge(
        SqliteStorage.layer({ filename: ":memory:" }),
        signedUrls(options.baseUrl, Redacted.make(new Uint8Array(randomBytes(32))))
      ),
      masterKey: given ?? Redacted.make(new Uint8Array(randomBytes(32))),
      where: "memory"
    }
  }
  if ("postgres" in chosen) {
    if (!/^postgres(ql)?:\/\/[^/]/i.test(chosen.postgres)) {
      throw new ConfigurationError("storage", "storage.postgres must be a postgres:// or postgresql:// URL")
    }
    const { PostgresClient, PostgresSecrets, PostgresStorage } = await loadPostgres()
    const mediaUrls = Layer.unwrapEffect(
      Effect.map(PostgresSecrets.getOrCreate("media-urls"), (secret) => signedUrls(options.baseUrl, secret))
    )
    return {
      layer: Layer.merge(PostgresStorage.layerFromClient, mediaUrls).pipe(
        Layer.provide(PostgresClient.layer({ connectionString: chosen.postgres }))
      ),
      masterKey: given,
      where: `PostgreSQL at ${URL.canParse(chosen.postgres) ? new URL(chosen.postgres).host : "its URL"}`
    }
  }
  const file = resolve(chosen.sqlite)
  const folder = dirname(file)
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 })
  } catch (error) {
    throw new ConfigurationError(
      "storage",
      `the folder of the SQLite file ${file} cannot be created: ${
        error instanceof Error ? error.message : String(error)
      }`,
      error
    )
  }
  return {
    // The filesystem blob store replaces SQLite's own: media stay out of the database.
    layer: Layer.mergeAll(
      SqliteStorage.layer({ filename: file }),
      FileBlobStore.layer(join(folder, "media")),
      signedUrls(options.baseUrl, secretFile(join(folder, "media.secret")))
    ),
    masterKey: given ?? masterKeyFile(join(folder, "master.key")),
    where: file
  }
}
