/**
 * The tables, as `@appexec/sql` declares them for every dialect (this module only forwards them
 * until the queue imports them from there).
 */
export type * from "@appexec/sql/SqlTables"
