/**
 * In-memory `OperatorViews` over the rows and outbox of `MemoryExecutions` (with no workspace
 * names: workspaces live in the key store).
 */
import type { ExecutionRecord, OperatorViews, WebhookOutbox } from "@appexec/core"
import { Effect } from "effect"
import { isFinished, isLive, type Row } from "./ExecutionRows.js"

/** `counts` with `row` added: running while it holds a live lease at `now`, else queued (`OperatorViews.WorkspaceLoad`). */
const counted = <A extends { readonly queued: number; readonly running: number }>(
  counts: A,
  row: Row,
  now: number
): A => isLive(row, now) ? { ...counts, running: counts.running + 1 } : { ...counts, queued: counts.queued + 1 }

/** The operator's views over `rows` (by execution id) and `outbox` (by delivery id). */
export const make = (
  rows: ReadonlyMap<string, Row>,
  outbox: ReadonlyMap<string, WebhookOutbox.OutboxEntry>
): OperatorViews.OperatorViews["Type"] => {
  function* openRows() {
    for (const row of rows.values()) if (!isFinished(row.record)) yield row
  }
  return {
    workspaceLoad: (now) =>
      Effect.sync(() => {
        const load = new Map<ExecutionRecord.ExecutionRecord["workspaceId"], OperatorViews.WorkspaceLoad>()
        for (const row of openRows()) {
          const { workspaceId } = row.record
          load.set(
            workspaceId,
            counted(load.get(workspaceId) ?? { workspaceId, name: null, queued: 0, running: 0 }, row, now)
          )
        }
        return [...load.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, counts]) => counts)
      }),
    appLoad: (now) =>
      Effect.sync(() => {
        const load = new Map<string, OperatorViews.AppLoad>()
        for (const row of openRows()) {
          const { appId, workflowId } = row.record
          const key = `${appId} ${workflowId}`
          load.set(key, counted(load.get(key) ?? { appId, workflowId, queued: 0, running: 0 }, row, now))
        }
        return [...load.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, counts]) => counts)
      }),
    finishedPerBucket: (since, until, bucketMs) =>
      Effect.sync(() => {
        const buckets = new Map<number, { completed: number; failed: number }>()
        for (const { record } of rows.values()) {
          const at = record.completedAt
          if (!isFinished(record) || at === null || at < since || at >= until) continue
          const n = Math.floor((at - since) / bucketMs)
          const counts = buckets.get(n) ?? { completed: 0, failed: 0 }
          if (record.status === "completed") counts.completed += 1
          else counts.failed += 1
          buckets.set(n, counts)
        }
        return [...buckets.entries()].sort(([a], [b]) => a - b).map(([n, counts]) => ({
          start: since + n * bucketMs,
          ...counts
        }))
      }),
    leaseHolders: Effect.sync(() => {
      const holders = new Map<string, { held: number; leaseExpiresAt: number }>()
      for (const row of rows.values()) {
        if (isFinished(row.record) || row.lease === null) continue
        const held = holders.get(row.lease.workerId) ?? { held: 0, leaseExpiresAt: 0 }
        holders.set(row.lease.workerId, {
          held: held.held + 1,
          leaseExpiresAt: Math.max(held.leaseExpiresAt, row.lease.expiresAt)
        })
      }
      return [...holders.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([workerId, held]) => ({ workerId, ...held }))
    }),
    holdersOf: (executionIds, now) =>
      Effect.sync(() => {
        const holders = new Map<string, string>()
        for (const id of executionIds) {
          const row = rows.get(id)
          if (row === undefined || isFinished(row.record) || !isLive(row, now)) continue
          holders.set(id, row.lease.workerId)
        }
        return holders
      }),
    failedDeliveries: (limit) =>
      Effect.sync(() =>
        // The outbox keeps insertion order: newest first is the reverse, then by creation.
        [...outbox.values()]
          .reverse()
          .filter((entry) => entry.status === "failed")
          .sort((a, b) => b.createdAt - a.createdAt)
          .slice(0, limit)
          .flatMap((entry) => {
            const row = rows.get(entry.executionId)
            return row === undefined
              ? []
              : [{ entry, workspaceId: row.record.workspaceId, workspaceName: null, appId: row.record.appId }]
          })
      )
  }
}
