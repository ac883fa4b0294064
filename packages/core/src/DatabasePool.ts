/**
 * Port, optional: the connections of the database pool that storage uses, read when the metrics
 * are rendered (`AppexecMetrics`: `appexec_db_pool_*`). The PostgreSQL storage provides it; SQLite
 * has one connection per process and no pool, and provides none.
 */
import { Context, type Effect } from "effect"

/** The pool's connections now. */
export interface PoolStats {
  /** Connections checked out, running a query or a transaction. */
  readonly inUse: number
  /** Connections open and free. */
  readonly idle: number
  /** Queries waiting for a connection (the pool is at `max` and none is free). */
  readonly waiting: number
  /** Most connections the pool opens. */
  readonly max: number
}

/** The database pool of the storage. */
export class DatabasePool extends Context.Tag("@appexec/core/DatabasePool")<
  DatabasePool,
  {
    /** The pool's connections now; never fails (a count of the pool's own state, no query). */
    readonly stats: Effect.Effect<PoolStats>
  }
>() {}
