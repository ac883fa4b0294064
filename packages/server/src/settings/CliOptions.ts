/**
 * The flags of a command, derived from its settings (docs/cli.md#settings): one `--name` per
 * setting, described in help with its default and its variable, and, once parsed, the settings in
 * force from the flags, the environment and the config file (`Resolve`). A bad value, a refused
 * flag or a bad config file is a usage error that names it, before anything starts.
 */
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Config, Effect, Either, Option } from "effect"
import { parse as parseYaml } from "yaml"
import * as Catalog from "./Catalog.js"
import * as ConfigFile from "./ConfigFile.js"
import * as Resolve from "./Resolve.js"
import type * as Setting from "./Setting.js"
import * as StoreSettings from "./StoreSettings.js"

/** A description as help shows it: links as their text, no backticks. */
export const plain = (markdown: string): string => markdown.replace(/\[([^\]]+)\]\([^)]*\)/g, "$1").replace(/`/g, "")

/** What help says of a setting: what it is for, its default and its variable. */
const helpOf = (setting: Setting.Any) =>
  `${plain(setting.description)} (${
    setting.toggle ? "" : `default ${plain(setting.shownDefault)}; `
  }${setting.variable}${setting.variableInverted ? "=false" : ""})`

/** The flag of one setting, under `flag` (its name unless renamed): its text when given. */
const optionOf = (setting: Setting.Any, flag: string): Options.Options<Option.Option<string>> =>
  setting.toggle
    ? Options.boolean(flag).pipe(
      Options.withDescription(helpOf(setting)),
      // Absent, an on/off flag is false: only a flag given (on) is a flag's value.
      Options.map((on) => (on ? Option.some("true") : Option.none()))
    )
    : Options.text(flag).pipe(
      Options.withPseudoName(setting.pseudo),
      Options.withDescription(helpOf(setting)),
      Options.optional
    )

/** The flags of `settings`, each under its name or the one `rename` gives it: the text of each given. */
export const flagsOf = (
  settings: ReadonlyArray<Setting.Any>,
  rename: Readonly<Record<string, string>> = {}
): Options.Options<ReadonlyMap<string, string>> =>
  Options.all(settings.map((setting) => optionOf(setting, rename[setting.name] ?? setting.name))).pipe(
    Options.map((given) =>
      new Map(
        settings.flatMap((setting, i) =>
          Option.match(given[i]!, { onNone: () => [], onSome: (text) => [[setting.name, text] as const] })
        )
      )
    )
  )

/** A usage error with `message`. */
const usage = (message: string) => ValidationError.invalidValue(HelpDoc.p(message))

/** The config file at `path`: JSON, or YAML for a `.yaml` or `.yml` file. */
export const readConfigFile = (path: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const content = yield* fs.readFileString(path).pipe(
      Effect.mapError((error) => `${path}: the config file cannot be read (${error.message})`)
    )
    const yaml = /\.ya?ml$/i.test(path)
    const text = yaml
      ? yield* Effect.try({
        // The same settings as JSON: a YAML file is read into a value, then as a JSON text.
        try: () => JSON.stringify(parseYaml(content) ?? {}),
        catch: (e) => `${path}: not YAML (${e instanceof Error ? e.message : String(e)})`
      })
      : content
    return yield* Either.match(ConfigFile.parse(path, text, Catalog.names), {
      onLeft: Effect.fail,
      onRight: Effect.succeed
    })
  })

/**
 * Where the settings of `settings` are read from: the flags given, their variables (through the
 * `ConfigProvider` in force: the environment), and the config file of `--config` or
 * `APPEXEC_CONFIG`, read and checked.
 */
export const sourcesOf = (
  settings: ReadonlyArray<Setting.Any>,
  rename: Readonly<Record<string, string>> = {}
): Options.Options<Resolve.Sources> =>
  flagsOf(settings, rename).pipe(
    Options.mapEffect((flags) =>
      Effect.gen(function*() {
        const variables = [...new Set([StoreSettings.config.variable, ...settings.map((s) => s.variable)])]
        const values = yield* Config.all(variables.map((v) => Config.option(Config.string(v)))).pipe(
          Effect.mapError((error) => usage(String(error)))
        )
        const env = Object.fromEntries(variables.map((v, i) => [v, Option.getOrUndefined(values[i]!)]))
        const configText = flags.get(StoreSettings.config.name) ?? env[StoreSettings.config.variable]
        const path = configText === undefined ? undefined : StoreSettings.config.value.read(configText)
        if (path !== undefined && Either.isLeft(path)) return yield* Effect.fail(usage(`--config: ${path.left}`))
        const file = path === undefined || path.right === undefined
          ? undefined
          : yield* readConfigFile(path.right).pipe(Effect.mapError(usage))
        return { flags, env, file, rename } satisfies Resolve.Sources
      })
    )
  )

/**
 * The settings of `settings` in force, for the role `roleOf` picks from the sources (`serve`
 * looks at `--no-worker`); a refused flag or a bad value is a usage error naming it.
 */
export const resolvedOf = (
  settings: ReadonlyArray<Setting.Any>,
  roleOf: (sources: Resolve.Sources) => Either.Either<Setting.Role, string>,
  options: { readonly rename?: Readonly<Record<string, string>>; readonly process?: string } = {}
): Options.Options<Resolve.Resolved> =>
  sourcesOf(settings, options.rename).pipe(
    Options.mapEffect((sources) =>
      Either.mapLeft(
        Either.flatMap(roleOf(sources), (role) => Resolve.resolve(settings, role, sources, options.process)),
        usage
      )
    )
  )
