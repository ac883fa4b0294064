#!/usr/bin/env node
/**
 * The `appexec` executable, compiled into one ES module (`dist/appexec.js`) that runs under
 * plain node as one process. Logs go to stderr in batches (`StderrLogger`: text on a terminal, else
 * logfmt, or as `APPEXEC_LOG_FORMAT` says: `json`, `logfmt`, `text`; level from
 * `APPEXEC_LOG_LEVEL`), so that stdout carries only what a
 * command prints; colour codes reach terminals only (`PlainConsole`). SIGTERM and SIGINT
 * interrupt the command, which shuts down in order and exits 0.
 */
import { ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Layer, Logger, LogLevel, Option } from "effect"
import { run } from "./Cli.js"
import * as PlainConsole from "./internal/PlainConsole.js"
import * as StderrLogger from "./StderrLogger.js"

const logger = StderrLogger.layer(StderrLogger.formatOf(process.env.APPEXEC_LOG_FORMAT, process.stderr.isTTY === true))

/** `APPEXEC_LOG_LEVEL`: `debug`, `info` (the default), `warning`, `error` or `none`. */
const levels: Readonly<Record<string, LogLevel.LogLevel>> = {
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  warn: LogLevel.Warning,
  error: LogLevel.Error,
  none: LogLevel.None
}
const levelName = (process.env.APPEXEC_LOG_LEVEL ?? "info").toLowerCase()
const level = levels[levelName]
if (level === undefined) {
  process.stderr.write(
    `appexec: APPEXEC_LOG_LEVEL '${levelName}' is not one of ${Object.keys(levels).join(", ")}; using info\n`
  )
}

/** The message of an error and of the errors that caused it, for the operator. */
const messageOf = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  const cause = error.cause instanceof Error ? messageOf(error.cause) : undefined
  const own = error.message.trim()
  return [own, cause].filter((m) => m !== undefined && m !== "").join(": ") || error.name
}

/** Says on stderr why a command failed: the message of a known error, the whole cause of a defect. */
const reportFailure = (cause: Cause.Cause<unknown>) =>
  Effect.sync(() => {
    if (Cause.isInterruptedOnly(cause)) return
    const failure = Cause.failureOption(cause)
    // @effect/cli has already shown its own usage errors with the help text.
    if (Option.isSome(failure) && ValidationError.isValidationError(failure.value)) return
    const message = Option.isSome(failure) ? messageOf(failure.value) : Cause.pretty(cause)
    process.stderr.write(`appexec: ${message}\n`)
  })

run(process.argv).pipe(
  Effect.provide(
    Layer.mergeAll(NodeContext.layer, logger, PlainConsole.layer, Logger.minimumLogLevel(level ?? LogLevel.Info))
  ),
  Effect.tapErrorCause(reportFailure),
  NodeRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
)
