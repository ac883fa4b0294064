/**
 * @appexec/sqlite: every storage and queue port of appexec on SQLite (kysely + better-sqlite3),
 * with versioned migrations; the dialect-neutral queries come from `@appexec/sql`. Start with
 * `SqliteStorage.layer({ filename })`.
 */
export * as SqliteAppStore from "./SqliteAppStore.js"
export * as SqliteClient from "./SqliteClient.js"
export * as SqliteExecutionQueue from "./SqliteExecutionQueue.js"
export * as SqliteExecutionStore from "./SqliteExecutionStore.js"
export * as SqliteKeyStore from "./SqliteKeyStore.js"
export * as SqliteMigrations from "./SqliteMigrations.js"
export * as SqliteStorage from "./SqliteStorage.js"
export * as SqliteWebhookOutbox from "./SqliteWebhookOutbox.js"
