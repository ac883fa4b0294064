/** The rows of the in-memory execution storage, shared by its store, queue, outbox and views. */
import type { ExecutionRecord } from "@appexec/core"
import { Effect } from "effect"

/** One execution as the in-memory store keeps it, with its queue state. */
export interface Row {
  /** Insertion order, from 1, as the SQL stores' `seq`. */
  readonly seq: number
  record: ExecutionRecord.ExecutionRecord
  lease: { workerId: string; token: number; expiresAt: number } | null
  attempts: number
  claims: number
  cancelRequested: boolean
}

/** The current time in milliseconds, from `Clock`. */
export const currentTime = Effect.clockWith((clock) => clock.currentTimeMillis)

/**
 * The record of a row as the SQL stores read it: with the queue's count of claims, absent until the
 * first, whatever `attempt` the saved record carried (`save` never writes it).
 */
export const recordOf = (row: Row): ExecutionRecord.ExecutionRecord => {
  const { attempt: _, ...record } = row.record
  return row.claims === 0 ? record : { ...record, attempt: row.claims }
}

/**
 * Whether a row holds a live lease at `now`: what the queue's caps count, and what the operator
 * views count as running (an unfinished row under none counts as queued, whatever its status).
 */
export const isLive = (row: Row, now: number): row is Row & { lease: NonNullable<Row["lease"]> } =>
  row.lease !== null && row.lease.expiresAt > now

/** Whether a record is terminal. */
export const isFinished = (record: ExecutionRecord.ExecutionRecord) =>
  record.status === "completed" || record.status === "failed"
