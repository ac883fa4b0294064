/**
 * @appexec/sqlite: every storage and queue port of appexec on SQLite (kysely + better-sqlite3),
 * with versioned migrations. Start with `SqliteStorage.layer({ filename })`.
 */
export * as SqliteAppStore from "./SqliteAppStore.js"
export * as SqliteBlobStore from "./SqliteBlobStore.js"
export * as SqliteClient from "./SqliteClient.js"
export * as SqliteExecutionQueue from "./SqliteExecutionQueue.js"
export * as SqliteExecutionStore from "./SqliteExecutionStore.js"
export * as SqliteKeyStore from "./SqliteKeyStore.js"
export * as SqliteMigrations from "./SqliteMigrations.js"
export * as SqliteRateLimitStore from "./SqliteRateLimitStore.js"
export * as SqliteSigningKeyStore from "./SqliteSigningKeyStore.js"
export * as SqliteStorage from "./SqliteStorage.js"
export * as SqliteWebhookOutbox from "./SqliteWebhookOutbox.js"
