/**
 * The release of the `appexec` command: the `version` of `@appexec/server`'s package.json, read
 * once, from the nearest folder above this module that holds it (the package's root, whether
 * this runs from `src/`, `dist/` or a chunk of the bundle under `dist/chunks/`). `appexec
 * --version`, the traces' service version and the metrics' `appexec_build_info` show it.
 */
import { Option, Schema } from "effect"
import { readFileSync } from "node:fs"

const PackageJson = Schema.parseJson(Schema.Struct({ name: Schema.String, version: Schema.String }))

/** The version in the package.json `levels` folders above this module, if it is the server's. */
const versionAt = (levels: number): Option.Option<string> => {
  try {
    const text = readFileSync(new URL(`${"../".repeat(levels)}package.json`, import.meta.url), "utf8")
    return Option.filterMap(
      Schema.decodeUnknownOption(PackageJson)(text),
      (json) => json.name === "@appexec/server" ? Option.some(json.version) : Option.none()
    )
  } catch {
    return Option.none()
  }
}

/** The release this process runs, e.g. `0.1.0` (`unknown` if the package.json cannot be found). */
export const VERSION: string = Option.getOrElse(
  Option.orElse(versionAt(1), () => versionAt(2)),
  () => "unknown"
)
