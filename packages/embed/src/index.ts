/**
 * @appexec/embed: appexec inside a Node service, with Promises. `createAppexec(options)` gives one
 * running instance — its HTTP API as a Node listener and a web handler, apps, executions, API
 * keys, secrets, `as({ workspace })`, `close()` — and every failure as an `AppexecError`
 * (docs/embedding.md). Built on the Effect API of `@appexec/core` and `@appexec/http`, which stays
 * there for hosts that use Effect.
 */
export {
  AppexecError,
  type AppexecErrorCode,
  ConfigurationError,
  ForbiddenError,
  InvalidAppDefinitionError,
  InvalidInputsError,
  NotFoundError
} from "./AppexecError.js"
export { DEFAULT_DRAIN, DEFAULT_WORKSPACE, type Options } from "./EmbedOptions.js"
export { DEFAULT_SQLITE_FILE, type StorageOption } from "./EmbedStorage.js"
export type { HostLogger, Level as LogLevel } from "./HostLogger.js"
export { type Appexec, createAppexec } from "./Instance.js"
export type { CreatedKey, KeyInfo, Keys, SecretInfo, Secrets } from "./Operator.js"
export type { ActAs, Apps, Executions, Workspace } from "./Workspace.js"
