/**
 * @appexec/console: the appexec console, a web page to try every app, watch it run, and find and
 * fix what failed. A client of the public API, signed in with an API key. The package holds the
 * page and its built files as data (`ConsoleAssets`); `@appexec/http` serves them when asked
 * (`console: true`), and `appexec serve` does by default.
 */
export * as ConsoleAssets from "./ConsoleAssets.js"
