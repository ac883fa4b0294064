/**
 * Migration 0015: webhook events beyond completion (docs/webhooks.md#events). An execution keeps
 * the events its webhook receives (`executions.webhook_events`, comma-separated; null for the
 * completion webhook alone), and an outbox row says which event it delivers (`event`, null for
 * the interface's completion webhook) and, for the events made while the execution runs, the body
 * to send (`body`). Adding a column with no default rewrites no row.
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `ALTER TABLE executions ADD COLUMN webhook_events text`,
  `ALTER TABLE webhook_outbox ADD COLUMN event text CHECK (event IN ('start', 'output', 'logs', 'completed'))`,
  `ALTER TABLE webhook_outbox ADD COLUMN body text`
]

/** Adds the columns. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
