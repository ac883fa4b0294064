/**
 * The settings in force for a process (docs/cli.md#settings): each from its flag, else its
 * `APPEXEC_*` variable, else the config file, else its default — and where it came from. A flag
 * of a setting the process does not use is refused, naming the process that needs it; a variable
 * or a key of the file that it does not use is left aside (one environment and one file may
 * serve every process of a deployment), and `appexec config check` lists it as such.
 */
import { Either } from "effect"
import type { ConfigFile } from "./ConfigFile.js"
import * as Setting from "./Setting.js"
import * as Values from "./Values.js"

/** Where a setting's value came from. */
export type Source =
  | { readonly _tag: "flag" }
  | { readonly _tag: "variable"; readonly name: string }
  | { readonly _tag: "file"; readonly path: string }
  | { readonly _tag: "default" }

/** What the settings are read from. */
export interface Sources {
  /** The text of each flag given on the command line, by setting name (`"true"` for an on/off flag given alone). */
  readonly flags: ReadonlyMap<string, string>
  /** The environment. */
  readonly env: Readonly<Record<string, string | undefined>>
  /** The config file, if one was given. */
  readonly file: ConfigFile | undefined
  /** The flags named otherwise than their settings (`signing-key rotate --grace`), by setting name. */
  readonly rename?: Readonly<Record<string, string>> | undefined
}

/** One setting as resolved: its value shown, where it came from, and whether the process uses it. */
export interface Entry {
  readonly setting: Setting.Any
  readonly shown: string
  readonly source: Source
  /** False for a variable or a key of the file that this process leaves aside. */
  readonly used: boolean
}

/** The settings in force for a process. */
export interface Resolved {
  /** The role they were resolved for. */
  readonly role: Setting.Role
  /** The value of `setting` in force (its default when it was not given or is not used). */
  readonly get: <A>(setting: Setting.Setting<A>) => A
  /** Each setting: the used ones, then those given but left aside. */
  readonly entries: ReadonlyArray<Entry>
}

/** How an operator names where a setting came from: `flag`, `variable APPEXEC_LEASE`, `file x.json`, `default`. */
export const describeSource = (source: Source): string =>
  source._tag === "variable"
    ? `variable ${source.name}`
    : source._tag === "file"
    ? `file ${source.path}`
    : source._tag

/** The opposite of an on/off text (`false` of `true`); a text that is neither, as it is. */
const inverted = (text: string): string =>
  Either.match(Values.toggle.read(text), { onLeft: () => text, onRight: (on) => String(!on) })

/** The text a setting is given by, and from where; none when it is not given. */
const givenText = (setting: Setting.Any, sources: Sources): { text: string; source: Source } | undefined => {
  const flag = sources.flags.get(setting.name)
  if (flag !== undefined) return { text: flag, source: { _tag: "flag" } }
  const variable = sources.env[setting.variable]
  if (variable !== undefined && variable.trim() !== "") {
    return {
      text: setting.variableInverted ? inverted(variable) : variable,
      source: { _tag: "variable", name: setting.variable }
    }
  }
  const inFile = sources.file?.values.get(setting.name)
  return inFile === undefined || sources.file === undefined
    ? undefined
    : { text: inFile, source: { _tag: "file", path: sources.file.path } }
}

/** How an error names where a bad value came from. */
const where = (setting: Setting.Any, source: Source, sources: Sources) =>
  source._tag === "flag"
    ? `--${sources.rename?.[setting.name] ?? setting.name}`
    : source._tag === "variable"
    ? source.name
    : source._tag === "file"
    ? `${setting.name} (in ${source.path})`
    : setting.name

/**
 * The settings of `settings` for `role` (its name for refusals: `process`) from `sources`; every
 * refusal and bad value, one per line, when there are any.
 */
export const resolve = (
  settings: ReadonlyArray<Setting.Any>,
  role: Setting.Role,
  sources: Sources,
  process: string = Setting.roleName[role]
): Either.Either<Resolved, string> => {
  const errors: Array<string> = []
  const texts = new Map<string, string>()
  const used: Array<Entry> = []
  const aside: Array<Entry> = []
  for (const setting of settings) {
    const given = givenText(setting, sources)
    const uses = Setting.usedBy(setting, role) || role === "admin"
    if (!uses) {
      if (given?.source._tag === "flag") errors.push(Setting.refusal(setting, process))
      else if (given !== undefined) {
        const read = setting.readAny(given.text)
        aside.push({
          setting,
          shown: Either.isRight(read) ? read.right.shown : given.text,
          source: given.source,
          used: false
        })
      }
      continue
    }
    if (given === undefined) {
      used.push({ setting, shown: setting.shownDefault, source: { _tag: "default" }, used: true })
      continue
    }
    const read = setting.readAny(given.text)
    if (Either.isLeft(read)) {
      errors.push(`${where(setting, given.source, sources)}: ${read.left}`)
      continue
    }
    texts.set(setting.name, given.text)
    used.push({ setting, shown: read.right.shown, source: given.source, used: true })
  }
  if (errors.length > 0) return Either.left(errors.join("\n"))
  return Either.right({
    role,
    entries: [...used, ...aside],
    get: <A>(setting: Setting.Setting<A>): A => {
      const text = texts.get(setting.name)
      return text === undefined ? setting.default : Either.getOrElse(setting.value.read(text), () => setting.default)
    }
  })
}
