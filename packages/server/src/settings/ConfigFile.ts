/**
 * The config file (docs/cli.md#the-config-file): `--config FILE` or `APPEXEC_CONFIG`, a JSON
 * object of settings under the flags' names (`{"lease": "1m", "allow-private-networks": true}`).
 * A value is written as the flag's (a string), or as a JSON number, boolean or list where the
 * flag takes one (`"webhook-retry-delays": ["5s", "1m"]`); an object is read as its JSON text
 * (`signing-key-jwk`). One file may serve every process of a deployment: each takes the settings
 * it uses and leaves the others aside. A key that is no setting is refused, naming the closest.
 */
import { Either, Schema } from "effect"
import { closest } from "../internal/AppNames.js"

/** A config file read: where it is, and the text of each setting it gives, by name. */
export interface ConfigFile {
  readonly path: string
  readonly values: ReadonlyMap<string, string>
}

const Settings = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** A JSON value as the text of a flag: lists joined by commas, objects as JSON, `null` as none. */
const textOf = (value: unknown): string =>
  value === null
    ? ""
    : typeof value === "string"
    ? value
    : typeof value === "number" || typeof value === "boolean"
    ? String(value)
    : Array.isArray(value) && value.every((item) => typeof item === "string" || typeof item === "number")
    ? value.join(",")
    : JSON.stringify(value)

/**
 * The settings of the file at `path` whose text is `content`, given the names of every setting
 * (`known`); why not, naming the file, when it is not a JSON object or names what no setting is.
 */
export const parse = (
  path: string,
  content: string,
  known: ReadonlyArray<string>
): Either.Either<ConfigFile, string> => {
  const json = Either.try({
    try: (): unknown => JSON.parse(content),
    catch: (e) => `${path}: not JSON (${e instanceof Error ? e.message : String(e)})`
  })
  if (Either.isLeft(json)) return Either.left(json.left)
  const decoded = Schema.decodeUnknownEither(Settings)(json.right)
  if (Either.isLeft(decoded) || Array.isArray(json.right)) {
    return Either.left(`${path}: not a JSON object of settings ({"lease": "1m", …})`)
  }
  const values = new Map<string, string>()
  for (const [key, value] of Object.entries(decoded.right)) {
    if (key === "config") return Either.left(`${path}: a config file cannot name another ('config')`)
    if (!known.includes(key)) {
      const near = closest(key, known)
      return Either.left(
        `${path}: '${key}' is not a setting${
          near.length > 0 ? `; did you mean ${near.map((n) => `'${n}'`).join(" or ")}?` : ""
        } (settings are named as their flags, without the dashes: docs/cli.md#settings)`
      )
    }
    values.set(key, textOf(value))
  }
  return Either.right({ path, values })
}
