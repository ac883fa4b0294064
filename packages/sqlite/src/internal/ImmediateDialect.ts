/**
 * kysely's better-sqlite3 dialect, with one change: transactions begin with `BEGIN IMMEDIATE`,
 * so that a transaction takes the write lock before it reads. A deferred transaction that reads
 * and then writes can fail with `SQLITE_BUSY` at once when another process wrote meanwhile; an
 * immediate one waits for the lock under `busy_timeout` instead.
 */
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver
} from "kysely"

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"))
  }
}

/** The better-sqlite3 dialect whose transactions are `BEGIN IMMEDIATE`. */
export class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig
  constructor(config: SqliteDialectConfig) {
    super(config)
    this.#config = config
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config)
  }
}
