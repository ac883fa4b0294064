/**
 * `appexec config check [--config FILE] [--role serve|worker|api] [flags…]` (docs/cli.md#appexec-config-check):
 * the settings a process of that role would start with, from the same flags, environment and
 * config file, each with where it came from (`flag`, `variable NAME`, `file PATH`, `default`), one
 * per line, tab-separated; secrets masked. Settings given by a variable or the file that the role
 * does not use follow, marked as such; so do the master key and the secrets of the environment
 * (never their values). What the process would refuse, it refuses with the same message.
 */
import { SecretStore } from "@appexec/core"
import { Command, Options } from "@effect/cli"
import { Console, Effect, Either } from "effect"
import { existsSync } from "node:fs"
import * as Database from "../Database.js"
import { masterKeyFile } from "../MasterKey.js"
import * as MediaStorage from "../MediaStorage.js"
import * as ApiSettings from "../settings/ApiSettings.js"
import * as Catalog from "../settings/Catalog.js"
import * as CliOptions from "../settings/CliOptions.js"
import * as Resolve from "../settings/Resolve.js"
import * as Setting from "../settings/Setting.js"
import * as SharedSettings from "../settings/SharedSettings.js"
import * as StoreSettings from "../settings/StoreSettings.js"
import { CommandFailed } from "./AdminCommands.js"

/** How a secret is shown: whether it is set, never what it is. */
const HIDDEN = "(set, hidden)"

/** The lines of `resolved`: `name`, value (masked for a secret), where it came from. */
export const linesOf = (resolved: Resolve.Resolved, env: Readonly<Record<string, string | undefined>>) => {
  const lines = resolved.entries.map((entry) =>
    entry.setting === ApiSettings.noWorker && resolved.role === "api"
      ? [entry.setting.name, "on", "--role api"].join("\t")
      : [
        entry.setting.name,
        entry.setting.secret && entry.source._tag !== "default" ? HIDDEN : CliOptions.plain(entry.shown),
        `${Resolve.describeSource(entry.source)}${
          entry.used ? "" : ` (not used by ${Setting.roleName[resolved.role]})`
        }`
      ].join("\t")
  )
  const data = resolved.get(StoreSettings.data)
  const keyFile = masterKeyFile(data)
  const masterKey = (env.APPEXEC_MASTER_KEY ?? "").trim() !== ""
    ? [HIDDEN, "variable APPEXEC_MASTER_KEY"]
    : existsSync(keyFile)
    ? [HIDDEN, `file ${keyFile}`]
    : ["none", `${keyFile} is made at the first start (set APPEXEC_MASTER_KEY in production)`]
  lines.push(["master-key", ...masterKey].join("\t"))
  // The keys used before the current one, and those other processes are about to seal with.
  const listed = [["previous", "APPEXEC_MASTER_KEY_PREVIOUS"], ["next", "APPEXEC_MASTER_KEY_NEXT"]] as const
  for (const [name, variable] of listed) {
    const keys = (env[variable] ?? "").split(",").filter((k) => k.trim() !== "").length
    if (keys > 0) lines.push([`master-key-${name}`, `${keys} key(s), hidden`, `variable ${variable}`].join("\t"))
  }
  for (const name of SecretStore.fromEnvironment(env).keys()) {
    lines.push([`secret ${name}`, HIDDEN, `variable ${SecretStore.ENVIRONMENT_PREFIX}${name.toUpperCase()}`].join("\t"))
  }
  return lines
}

const role = Options.choice("role", ["serve", "api", "worker"]).pipe(
  Options.withDescription(
    "The process to check: serve (the API and the work), api (serve --no-worker) or worker (default serve)"
  ),
  Options.withDefault("serve" as const)
)

const check = Command.make(
  "check",
  { role, sources: CliOptions.sourcesOf(Catalog.serve) },
  ({ role, sources }) =>
    Effect.gen(function*() {
      const resolved = yield* Either.match(Resolve.resolve(Catalog.serve, role, sources), {
        onLeft: (message) => Effect.fail(new CommandFailed({ message })),
        onRight: Effect.succeed
      })
      // What the process checks before it starts: the bucket's settings together, the CA file.
      yield* MediaStorage.fromSettings(SharedSettings.mediaOf(resolved))
      yield* Database.fromSettings(resolved)
      for (const line of linesOf(resolved, process.env)) yield* Console.log(line)
    })
).pipe(
  Command.withDescription(
    "Print the settings a process of --role would start with: name, value (secrets hidden), where it came from"
  )
)

/** `appexec config …`. */
export const config = Command.make("config").pipe(
  Command.withDescription("Settings: check what a process would start with, and where each came from"),
  Command.withSubcommands([check])
)
