/**
 * @appexec/postgres: every storage and queue port of appexec on PostgreSQL (kysely + pg), with
 * versioned migrations, for many API and worker processes sharing one database; the
 * dialect-neutral queries come from `@appexec/sql`. Start with
 * `PostgresStorage.layer({ connectionString })`.
 */
export * as PostgresAppStore from "./PostgresAppStore.js"
export * as PostgresClient from "./PostgresClient.js"
export * as PostgresCountedStarts from "./PostgresCountedStarts.js"
export * as PostgresExecutionQueue from "./PostgresExecutionQueue.js"
export * as PostgresExecutionReports from "./PostgresExecutionReports.js"
export * as PostgresExecutionStore from "./PostgresExecutionStore.js"
export * as PostgresKeyStore from "./PostgresKeyStore.js"
export * as PostgresMigrations from "./PostgresMigrations.js"
export * as PostgresSecrets from "./PostgresSecrets.js"
export * as PostgresStorage from "./PostgresStorage.js"
export * as PostgresWebhookOutbox from "./PostgresWebhookOutbox.js"
