/**
 * Migration 0005: live executions. `execution_reports` keeps what running executions report, by
 * execution and event id: one row per log line, and one per node for progress (the unique partial
 * index `execution_reports_progress`, which an append's upsert replaces); `execution_logs` keeps
 * per execution the counts that bound its log and what was dropped. `executions_queued` counts a
 * queued execution's position from the index alone.
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `CREATE TABLE execution_reports (
    execution_id TEXT NOT NULL REFERENCES executions (execution_id),
    id BIGINT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('progress', 'log')),
    node_id TEXT CHECK (kind = 'log' OR node_id IS NOT NULL),
    level TEXT CHECK (kind = 'progress' OR level IN ('info', 'warn', 'error')),
    fraction DOUBLE PRECISION CHECK (kind = 'log' OR fraction IS NOT NULL),
    message TEXT CHECK (kind = 'progress' OR message IS NOT NULL),
    message_length INTEGER NOT NULL,
    at BIGINT NOT NULL,
    PRIMARY KEY (execution_id, id)
  )`,
  `CREATE UNIQUE INDEX execution_reports_progress ON execution_reports (execution_id, node_id) WHERE kind = 'progress'`,
  `CREATE TABLE execution_logs (
    execution_id TEXT PRIMARY KEY REFERENCES executions (execution_id),
    lines BIGINT NOT NULL,
    bytes BIGINT NOT NULL,
    dropped BIGINT NOT NULL,
    dropped_through BIGINT NOT NULL
  )`,
  `CREATE INDEX executions_queued ON executions (workspace_id, seq) WHERE status = 'queued'`
]

/** Creates the tables and the index. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
