#!/usr/bin/env -S npx tsx
/**
 * The `appexec` executable. Logs go to stderr (logfmt, or JSON with `APPEXEC_LOG_FORMAT=json`;
 * level from `APPEXEC_LOG_LEVEL`),
 * so that stdout carries only what a command prints.
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { run } from "./Cli.js"

const logger = Logger.replace(
  Logger.defaultLogger,
  (process.env.APPEXEC_LOG_FORMAT === "json" ? Logger.jsonLogger : Logger.logfmtLogger).pipe(Logger.withConsoleError)
)

/** `APPEXEC_LOG_LEVEL` (`debug`, `info`, `warning`, `error`, `none`); info by default. */
const level = LogLevel.allLevels.find((l) => l.label === (process.env.APPEXEC_LOG_LEVEL ?? "info").toUpperCase().replace("WARNING", "WARN"))

run(process.argv).pipe(
  Effect.provide(Layer.mergeAll(NodeContext.layer, logger, Logger.minimumLogLevel(level ?? LogLevel.Info))),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
