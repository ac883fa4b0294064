/**
 * @appexec/sql: appexec's storage on SQL for every dialect — the tables, the mapping of rows to
 * records, and every dialect-neutral query (kysely), run through `SqlRunner`, the small port that
 * `@appexec/sqlite` and `@appexec/postgres` implement over their clients, with `SqlDialect` hooks
 * where the dialects differ.
 */
export * as ExecutionRows from "./ExecutionRows.js"
export * as PreparedQuery from "./PreparedQuery.js"
export * as RateLimitCounters from "./RateLimitCounters.js"
export * as RowMapping from "./RowMapping.js"
export * as SqlAppStore from "./SqlAppStore.js"
export * as SqlBlobStore from "./SqlBlobStore.js"
export * as SqlDialect from "./SqlDialect.js"
export * as SqlExecutionQueue from "./SqlExecutionQueue.js"
export * as SqlExecutionReports from "./SqlExecutionReports.js"
export * as SqlExecutionStore from "./SqlExecutionStore.js"
export * as SqlKeyStore from "./SqlKeyStore.js"
export * as SqlMediaStoreRegistry from "./SqlMediaStoreRegistry.js"
export * as SqlMigrations from "./SqlMigrations.js"
export * as SqlOperatorViews from "./SqlOperatorViews.js"
export * as SqlProcessRegistry from "./SqlProcessRegistry.js"
export * as SqlRateLimitStore from "./SqlRateLimitStore.js"
export * as SqlRunner from "./SqlRunner.js"
export * as SqlSealedSecretStore from "./SqlSealedSecretStore.js"
export * as SqlSigningKeyStore from "./SqlSigningKeyStore.js"
export * as SqlTables from "./SqlTables.js"
export * as SqlWebhookOutbox from "./SqlWebhookOutbox.js"
