/**
 * The `appexec` command (docs/cli.md): `serve`, `worker`, the admin commands, `config check` and
 * `run`. Every setting is a flag, an `APPEXEC_*` variable and a key of the config file, defined
 * once (`settings/`); a flag of a setting that the command would not use is refused before
 * anything runs, naming the process that needs it. Admin commands print only their result on
 * stdout (logs go to stderr) and run against the same database as `serve` (SQLite under
 * `--data`, or PostgreSQL with `--database`), also while it runs.
 */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import * as AdminCommands from "./commands/AdminCommands.js"
import { config } from "./commands/ConfigCommand.js"
import * as KeyCommands from "./commands/KeyCommands.js"
import * as MasterKeyCommand from "./commands/MasterKeyCommand.js"
import * as MediaCommands from "./commands/MediaCommands.js"
import { migrateCommand } from "./commands/MigrateCommand.js"
import { runCommand } from "./commands/RunCommand.js"
import * as SecretCommands from "./commands/SecretCommands.js"
import { serveCommand } from "./commands/ServeCommand.js"
import { workerCommand } from "./commands/WorkerCommand.js"
import { commandWords } from "./internal/HelpText.js"
import * as Catalog from "./settings/Catalog.js"
import * as Setting from "./settings/Setting.js"
import { VERSION } from "./Version.js"

/** The whole command tree. */
export const command = Command.make("appexec").pipe(
  Command.withDescription("appexec: asynchronous app execution service"),
  Command.withSubcommands([
    serveCommand,
    workerCommand,
    KeyCommands.workspaces,
    KeyCommands.keys,
    AdminCommands.apps,
    AdminCommands.executions,
    AdminCommands.signingKey,
    MasterKeyCommand.masterKey,
    SecretCommands.secrets,
    AdminCommands.prune,
    MediaCommands.media,
    migrateCommand,
    config,
    runCommand
  ])
)

/**
 * Why `args` (the command's words and flags, as `process.argv` without node and the script) give
 * a setting as a flag to a command that would not use it (`worker --rate-limit 5`), if they do.
 */
export const misplaced = (args: ReadonlyArray<string>): string | undefined => {
  const words = commandWords(args)
  const declared = Catalog.ofCommand(words)
  if (declared === undefined) return undefined
  const own = Catalog.ownOptions(words)
  const end = args.indexOf("--")
  for (const arg of end === -1 ? args : args.slice(0, end)) {
    const flag = arg.startsWith("--") ? arg.slice(2).split("=")[0]! : undefined
    const setting = flag === undefined || own.includes(flag) ? undefined : Catalog.named(flag)
    if (setting !== undefined && !declared.some((d) => d.name === setting.name)) {
      const name = words.length === 1 || ["serve", "worker", "prune"].includes(words[0]!)
        ? words[0]
        : words.slice(0, 2).join(" ")
      return Setting.refusal(setting, `appexec ${name}`)
    }
  }
  return undefined
}

const cli = Command.run(command, { name: "appexec", version: VERSION })

/** Runs the command on `argv` (as `process.argv`). */
export const run = (argv: ReadonlyArray<string>) => {
  const refused = misplaced(argv.slice(2))
  return refused === undefined ? cli(argv) : Effect.fail(new AdminCommands.CommandFailed({ message: refused }))
}
