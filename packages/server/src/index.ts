/**
 * @appexec/server: the `appexec` command — the standalone server on SQLite and the admin commands.
 */
export * as Bootstrap from "./Bootstrap.js"
export * as Cli from "./Cli.js"
export * as ExecutionLog from "./ExecutionLog.js"
export * as Instance from "./Instance.js"
export * as Serve from "./Serve.js"
export * as StderrLogger from "./StderrLogger.js"
export * as Work from "./Work.js"
