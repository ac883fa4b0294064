/**
 * The master key of the standalone server: the key-encryption key that seals the webhook signing
 * keys in the database (`SecretSealing` of `@appexec/core`). It comes from `APPEXEC_MASTER_KEY`
 * (32 bytes as base64url, base64 or hex) when set, else from the file `master.key` in the data
 * directory, created (32 random bytes, mode 0600) on first use. The file beside the data is a
 * convenience for development: a copy of the data directory then holds both the sealed keys and
 * the key that opens them, so in production the key is kept elsewhere (docs/cli.md#secrets-at-rest).
 * Keys used before the current one are given in `APPEXEC_MASTER_KEY_PREVIOUS` (comma-separated),
 * and keys other processes are about to seal with in `APPEXEC_MASTER_KEY_NEXT` (the first phase
 * of a change of master key, docs/secrets.md).
 */
import { Errors, SecretSealing } from "@appexec/core"
import { Either, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

/** The master key file of a data directory. */
export const masterKeyFile = (dataDir: string) => join(dataDir, "master.key")

/** The master keys of an instance. */
export interface MasterKeys {
  readonly masterKey: Redacted.Redacted<Uint8Array>
  readonly previousMasterKeys: ReadonlyArray<Redacted.Redacted<Uint8Array>>
  /** Keys that open what they sealed without sealing anything (`APPEXEC_MASTER_KEY_NEXT`). */
  readonly nextMasterKeys: ReadonlyArray<Redacted.Redacted<Uint8Array>>
  /** Where the current key came from, for the log. */
  readonly source: "environment" | "file"
}

const invalid = (setting: string, reason: string) => Either.left(new Errors.InvalidConfiguration({ setting, reason }))

const KEY_FORMAT = "32 bytes as base64url, base64 or hex"

/**
 * The master keys from `env`, else the key file of `dataDir`, created when missing unless
 * `create` is false (an admin command that makes no database: it must not leave a key that
 * opens nothing, so it says which key to give instead).
 */
export const masterKeysOf = (
  dataDir: string,
  env: Readonly<Record<string, string | undefined>>,
  options: { readonly create: boolean } = { create: true }
): Either.Either<MasterKeys, Errors.InvalidConfiguration> => {
  const listed = (
    variable: string
  ): Either.Either<Array<Redacted.Redacted<Uint8Array>>, Errors.InvalidConfiguration> => {
    const keys: Array<Redacted.Redacted<Uint8Array>> = []
    for (const text of (env[variable] ?? "").split(",").filter((t) => t.trim() !== "")) {
      const key = SecretSealing.parseMasterKey(text)
      if (key === undefined) return invalid(variable, `each key must be ${KEY_FORMAT}`)
      keys.push(key)
    }
    return Either.right(keys)
  }
  const previousKeys = listed("APPEXEC_MASTER_KEY_PREVIOUS")
  if (Either.isLeft(previousKeys)) return Either.left(previousKeys.left)
  const nextKeys = listed("APPEXEC_MASTER_KEY_NEXT")
  if (Either.isLeft(nextKeys)) return Either.left(nextKeys.left)
  const previous = previousKeys.right
  const next = nextKeys.right
  const given = env.APPEXEC_MASTER_KEY
  if (given !== undefined && given.trim() !== "") {
    const key = SecretSealing.parseMasterKey(given)
    return key === undefined
      ? invalid("APPEXEC_MASTER_KEY", `must be ${KEY_FORMAT}`)
      : Either.right({ masterKey: key, previousMasterKeys: previous, nextMasterKeys: next, source: "environment" })
  }
  const file = masterKeyFile(dataDir)
  if (!existsSync(file) && !options.create) {
    return invalid(
      "APPEXEC_MASTER_KEY",
      `not set, and there is no ${file}: give this command the master key of the serve and worker processes ` +
        "on this database (APPEXEC_MASTER_KEY), or the --data directory that holds it; it makes none"
    )
  }
  if (!existsSync(file)) {
    writeFileSync(file, `${SecretSealing.formatMasterKey(Redacted.make(new Uint8Array(randomBytes(32))))}\n`, {
      mode: 0o600,
      flag: "wx"
    })
  }
  chmodSync(file, 0o600)
  const key = SecretSealing.parseMasterKey(readFileSync(file, "utf8"))
  return key === undefined
    ? invalid(file, `must hold ${KEY_FORMAT}`)
    : Either.right({ masterKey: key, previousMasterKeys: previous, nextMasterKeys: next, source: "file" })
}
