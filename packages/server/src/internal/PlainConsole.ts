/**
 * The console of the `appexec` command: what goes to a stream that is not a terminal (a pipe, a
 * file, a CI log) — or to any stream when `NO_COLOR` is set — has its colour and style codes
 * removed, so help and errors read as plain text there. Help is made readable (`HelpText`: its
 * subcommands as names and descriptions, its usage line naming the whole command), wherever it goes.
 */
import { Console, Effect, Layer } from "effect"
import { stripVTControlCharacters } from "node:util"
import * as HelpText from "./HelpText.js"

/** Whether text written to `stream` keeps its colour codes. */
const keepsColour = (stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv): boolean =>
  stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === "")

const plain = (args: ReadonlyArray<unknown>) =>
  args.map((a) => (typeof a === "string" ? stripVTControlCharacters(a) : a))

/**
 * `console` with the colour codes of its stdout and stderr output removed where they do not
 * belong; `args` are the command's arguments (`process.argv` without node and the script), whose
 * command words complete help's usage line.
 */
export const make = (
  console: Console.Console,
  env: NodeJS.ProcessEnv = process.env,
  args: ReadonlyArray<string> = process.argv.slice(2)
): Console.Console => {
  const out = keepsColour(process.stdout, env)
  const err = keepsColour(process.stderr, env)
  const words = HelpText.commandWords(args)
  const tidied = (args: ReadonlyArray<unknown>) =>
    args.map((a) => (typeof a === "string" ? HelpText.tidy(a, words) : a))
  const onOut = (f: (...args: ReadonlyArray<unknown>) => Effect.Effect<void>) => (...args: ReadonlyArray<unknown>) =>
    out ? f(...tidied(args)) : f(...plain(tidied(args)))
  const onErr = (f: (...args: ReadonlyArray<unknown>) => Effect.Effect<void>) => (...args: ReadonlyArray<unknown>) =>
    err ? f(...args) : f(...plain(args))
  return {
    ...console,
    log: onOut((...args) => console.log(...args)),
    info: onOut((...args) => console.info(...args)),
    debug: onOut((...args) => console.debug(...args)),
    error: onErr((...args) => console.error(...args)),
    warn: onErr((...args) => console.warn(...args))
  }
}

/** The command's console, in place of the default one. */
export const layer: Layer.Layer<never> = Layer.unwrapEffect(
  Effect.map(Effect.console, (console) => Console.setConsole(make(console)))
)
