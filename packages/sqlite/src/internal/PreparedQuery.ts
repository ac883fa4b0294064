/**
 * `PreparedQuery` of `@appexec/sql` (this module only forwards it until the queue imports it
 * from there).
 */
export * from "@appexec/sql/PreparedQuery"
