/**
 * The `appexec` command (docs/cli.md): `serve`, `worker`, the admin commands and `run`. Every
 * flag also reads an `APPEXEC_*` environment variable, and takes its default from the module
 * that owns the setting (`internal/Flags`). Admin commands print only their result on stdout
 * (logs go to stderr) and run against the same database as `serve` (SQLite under `--data`, or
 * PostgreSQL with `--database`), also while it runs.
 */
import { Command } from "@effect/cli"
import * as AdminCommands from "./AdminCommands.js"
import * as KeyCommands from "./KeyCommands.js"
import * as MasterKeyCommand from "./MasterKeyCommand.js"
import { migrateCommand } from "./MigrateCommand.js"
import { runCommand } from "./RunCommand.js"
import * as SecretCommands from "./SecretCommands.js"
import { serveCommand } from "./ServeCommand.js"
import { workerCommand } from "./WorkerCommand.js"

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
    migrateCommand,
    runCommand
  ])
)

/** Runs the command on `argv` (as `process.argv`). */
export const run = Command.run(command, { name: "appexec", version: "0.1.0" })
