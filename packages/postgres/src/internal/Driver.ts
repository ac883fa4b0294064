/**
 * `pg`, loaded when the first pool or connection opens rather than at import: a process on
 * SQLite (every `appexec` command without `--database postgres://…`) never loads it.
 */
import { createRequire } from "node:module"
import type pg from "pg"

const load = createRequire(import.meta.url)
let driver: typeof pg | undefined

/** The `pg` module. */
export const loadPg = (): typeof pg => (driver ??= load("pg") as typeof pg)
