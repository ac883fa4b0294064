/**
 * Settings read in this process, as the command reads them: flags parsed by @effect/cli, the
 * variables of `env` alone (no other environment), the file system of the machine.
 */
import { CliConfig, HelpDoc, type Options } from "@effect/cli"
import { Options as CliOptions } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect } from "effect"
import type * as Resolve from "../../src/settings/Resolve.js"

/** What `options` parses from `args`, with only `env` as the environment. */
export const parse = <A>(options: Options.Options<A>, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  CliOptions.processCommandLine(options, args, CliConfig.defaultConfig).pipe(
    Effect.map(([, , value]) => value),
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.provide(NodeContext.layer)
  )

/** Why `options` refused `args`, as the operator reads it. */
export const refusal = <A>(
  options: Options.Options<A>,
  args: ReadonlyArray<string>,
  env: Record<string, string> = {}
) =>
  parse(options, args, env).pipe(
    Effect.flip,
    Effect.map((error) => ("error" in error ? HelpDoc.toAnsiText(error.error).trim() : String(error)))
  )

/** Sources of settings: flags by name, variables, and a file's values. */
export const sources = (
  flags: Record<string, string> = {},
  env: Record<string, string> = {},
  file?: { readonly path: string; readonly values: Record<string, string> }
): Resolve.Sources => ({
  flags: new Map(Object.entries(flags)),
  env,
  file: file === undefined ? undefined : { path: file.path, values: new Map(Object.entries(file.values)) }
})
