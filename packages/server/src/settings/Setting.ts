/**
 * One setting of the `appexec` command, defined once (docs/cli.md#settings): its name (the flag
 * `--name`, and the key of the config file), its `APPEXEC_*` variable, what it is for, its value's
 * text form and default, whether it is a secret, and the parts of a deployment whose work it
 * governs. The flags, the variables, the config file, `appexec config check`, the refusals of a
 * setting a process would not use and the tables of docs/cli.md are all derived from it.
 */
import { Either } from "effect"
import type { Value } from "./Values.js"

/** A part of a deployment: the HTTP API, the work (executions, webhooks, retention), the admin commands. */
export type Part = "api" | "worker" | "admin"

/**
 * A process as settings see it: `serve` (the API and the work), `api` (`serve --no-worker`),
 * `worker`, or `admin` (the admin commands and `config check` of no role).
 */
export type Role = "serve" | "api" | "worker" | "admin"

/** The parts each role runs. */
const partsOf: Readonly<Record<Role, ReadonlyArray<Part>>> = {
  serve: ["api", "worker"],
  api: ["api"],
  worker: ["worker"],
  admin: ["admin"]
}

/** The process a role is, as an operator starts it. */
export const roleName: Readonly<Record<Role, string>> = {
  serve: "appexec serve",
  api: "appexec serve --no-worker",
  worker: "appexec worker",
  admin: "the admin commands"
}

/** What a part does, for a refusal that says where a setting applies. */
const partPhrase: Readonly<Record<Part, string>> = {
  api: "to the HTTP API (appexec serve, with or without --no-worker)",
  worker: "where executions run and webhooks go out (appexec worker, and appexec serve without --no-worker)",
  admin: "to the admin commands"
}

/** A setting with its value's type left out: what lists, docs and the config file need. */
export interface Any {
  /** The flag without its dashes, and the key of the config file: `max-attempts`. */
  readonly name: string
  /** Its environment variable: `APPEXEC_MAX_ATTEMPTS`. */
  readonly variable: string
  /** What it is for, in Markdown (docs/cli.md); help shows it without the links. */
  readonly description: string
  /** The parts of a deployment it governs; a role running none of them refuses it as a flag. */
  readonly parts: ReadonlyArray<Part>
  /** A secret: `config check` shows whether it is set, never its value. */
  readonly secret: boolean
  /** What its value looks like in help (`DURATION`, `N`, `URL`); empty for an on/off flag. */
  readonly pseudo: string
  /** An on/off flag: given alone, it is on. */
  readonly toggle: boolean
  /** An on/off setting whose variable says the opposite: `APPEXEC_MIGRATE=false` is `--no-migrate`. */
  readonly variableInverted: boolean
  /** The default as docs and help say it (`30s`, `off`, `none`, or words such as `the listening address`). */
  readonly shownDefault: string
  /** Reads a text (of a flag, a variable or the file): the value, how it is shown back, or why not. */
  readonly readAny: (text: string) => Either.Either<{ readonly value: unknown; readonly shown: string }, string>
  /** More words for a refusal of this setting as a flag where it would do nothing. */
  readonly hint: string | undefined
}

/** A setting whose value is an `A`. */
export interface Setting<A> extends Any {
  readonly value: Value<A>
  /** Its value when no flag, variable or file gives one. */
  readonly default: A
}

/** How a setting is defined; the variable defaults to `APPEXEC_` and the name in capitals. */
export interface Definition<A> {
  readonly name: string
  readonly variable?: string
  readonly description: string
  readonly parts: ReadonlyArray<Part>
  readonly value: Value<A>
  readonly default: A
  /** Words for the default instead of the value shown (`the example apps shipped …`). */
  readonly defaultText?: string
  readonly secret?: boolean
  readonly hint?: string
  /** For an on/off setting named for turning something off: its variable names the thing itself. */
  readonly variableInverted?: boolean
}

/** A setting from its definition. */
export const make = <A>(definition: Definition<A>): Setting<A> => ({
  name: definition.name,
  variable: definition.variable ?? `APPEXEC_${definition.name.toUpperCase().replace(/-/g, "_")}`,
  description: definition.description,
  parts: definition.parts,
  secret: definition.secret ?? false,
  pseudo: definition.value.pseudo,
  toggle: definition.value.toggle,
  variableInverted: definition.variableInverted ?? false,
  shownDefault: definition.defaultText ?? definition.value.show(definition.default),
  readAny: (text) =>
    Either.map(definition.value.read(text), (value) => ({ value, shown: definition.value.show(value) })),
  hint: definition.hint,
  value: definition.value,
  default: definition.default
})

/** Whether `role` runs a part `setting` governs. */
export const usedBy = (setting: Any, role: Role): boolean => setting.parts.some((part) => partsOf[role].includes(part))

/** Why `--name` is refused by `process` (`appexec worker`): it would do nothing there, and where it applies. */
export const refusal = (setting: Any, process: string): string =>
  `--${setting.name} would do nothing in ${process}: it applies ${
    setting.parts.map((part) => partPhrase[part]).join(", and ")
  }${setting.hint === undefined ? "" : ` (${setting.hint})`}`
