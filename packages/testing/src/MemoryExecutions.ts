/**
 * In-memory `ExecutionStore`, `ExecutionQueue` and `WebhookOutbox` over one shared state, so a
 * terminal save and its outbox entry are one atomic step, as in the SQL adapters.
 */
import { Errors, ExecutionQueue, type ExecutionRecord, ExecutionStore, WebhookOutbox } from "@appexec/core"
import { Context, Effect, Layer, Option, Queue } from "effect"

interface Row {
  record: ExecutionRecord.ExecutionRecord
  lease: { workerId: string; token: number; expiresAt: number } | null
  attempts: number
  claims: number
  cancelRequested: boolean
}

const currentTime = Effect.clockWith((clock) => clock.currentTimeMillis)

const isFinished = (record: ExecutionRecord.ExecutionRecord) =>
  record.status === "completed" || record.status === "failed"

/** Fresh in-memory execution storage: a context with the store, the queue and the outbox. */
export const make = Effect.gen(function*() {
  const rows = new Map<string, Row>()
  /** Non-terminal executions in insertion (creation) order: the only ones a claim looks at. */
  const open = new Set<string>()
  const outbox = new Map<string, WebhookOutbox.OutboxEntry>()
  /** Idempotency keys by workspace and key. */
  const idempotency = new Map<
    string,
    ExecutionStore.IdempotencyKey & { readonly executionId: ExecutionRecord.ExecutionRecord["executionId"] }
  >()
  const wake = yield* Queue.sliding<void>(1)

  const isCurrent = (row: Row | undefined, lease: ExecutionQueue.Lease): row is Row =>
    row !== undefined && row.lease !== null && row.lease.token === lease.token && row.lease.workerId === lease.workerId

  const insert = (record: ExecutionRecord.ExecutionRecord) =>
    Effect.suspend(() => {
      rows.set(record.executionId, { record, lease: null, attempts: 0, claims: 0, cancelRequested: false })
      open.add(record.executionId)
      return Queue.offer(wake, undefined)
    })

  const store: ExecutionStore.ExecutionStore["Type"] = {
    insert,
    insertIdempotent: (record, key, now) =>
      Effect.suspend((): Effect.Effect<ExecutionStore.IdempotentInsert> => {
        const id = `${key.workspaceId}\u0000${key.key}`
        const held = idempotency.get(id)
        if (held !== undefined && held.expiresAt > now) {
          return Effect.succeed({
            _tag: "Existing",
            executionId: held.executionId,
            fingerprint: held.fingerprint
          })
        }
        idempotency.set(id, { ...key, executionId: record.executionId })
        return Effect.as(insert(record), { _tag: "Inserted" })
      }),
    get: (executionId) => Effect.sync(() => Option.map(Option.fromNullable(rows.get(executionId)), (r) => r.record)),
    save: (record, lease, entry) =>
      Effect.suspend(() => {
        const row = rows.get(record.executionId)
        if (!isCurrent(row, lease)) return Effect.fail(new Errors.LeaseLost({ executionId: record.executionId }))
        row.record = record
        if (record.status === "completed" || record.status === "failed") {
          row.lease = null
          open.delete(record.executionId)
          if (entry !== undefined) outbox.set(entry.deliveryId, entry)
        }
        return Effect.void
      }),
    list: ({ limit, status, workspaceId }) =>
      Effect.sync(() => {
        const found: Array<ExecutionRecord.ExecutionRecord> = []
        // Rows are kept in insertion order: newest first is the reverse.
        for (const row of [...rows.values()].reverse()) {
          if (found.length >= limit) break
          if (workspaceId !== undefined && row.record.workspaceId !== workspaceId) continue
          if (status !== undefined && row.record.status !== status) continue
          found.push(row.record)
        }
        return found
      }),
    finishedBefore: (cutoff, limit) =>
      Effect.sync(() =>
        [...rows.values()]
          .filter((r) => isFinished(r.record) && r.record.completedAt !== null && r.record.completedAt < cutoff)
          .sort((a, b) => a.record.completedAt! - b.record.completedAt!)
          .slice(0, limit)
          .map((r) => r.record.executionId)
      ),
    deleteFinished: (executionIds) =>
      Effect.sync(() => {
        let deleted = 0
        for (const id of executionIds) {
          const row = rows.get(id)
          if (row === undefined || !isFinished(row.record)) continue
          rows.delete(id)
          for (const [deliveryId, entry] of outbox) if (entry.executionId === id) outbox.delete(deliveryId)
          deleted += 1
        }
        return deleted
      }),
    countOpen: Effect.sync(() => {
      let queued = 0
      let running = 0
      for (const id of open) {
        if (rows.get(id)!.record.status === "queued") queued += 1
        else running += 1
      }
      return { queued, running }
    }),
    cancelQueued: (record, now, entry) =>
      Effect.sync(() => {
        const row = rows.get(record.executionId)
        if (row === undefined || row.record.status !== "queued") return false
        if (row.lease !== null && row.lease.expiresAt > now) return false
        row.record = record
        row.lease = null
        open.delete(record.executionId)
        if (entry !== undefined) outbox.set(entry.deliveryId, entry)
        return true
      }),
    requestCancel: (executionId) =>
      Effect.sync(() => {
        const row = rows.get(executionId)
        if (row === undefined || (row.record.status !== "queued" && row.record.status !== "running")) return false
        row.cancelRequested = true
        return true
      })
  }

  const queue: ExecutionQueue.ExecutionQueue["Type"] = {
    claim: (workerId, leaseMs) =>
      Effect.map(currentTime, (now) => {
        for (const id of open) {
          const row = rows.get(id)!
          if (row.lease !== null && row.lease.expiresAt > now) continue
          row.claims += 1
          row.attempts += 1
          row.lease = { workerId, token: row.claims, expiresAt: now + leaseMs }
          return Option.some({
            execution: row.record,
            lease: {
              executionId: row.record.executionId,
              workerId,
              token: row.claims,
              attempt: row.attempts,
              expiresAt: now + leaseMs
            }
          })
        }
        return Option.none()
      }),
    renew: (lease, leaseMs) =>
      Effect.flatMap(currentTime, (now) => {
        const row = rows.get(lease.executionId)
        if (!isCurrent(row, lease) || row.lease!.expiresAt <= now) {
          return Effect.fail(new Errors.LeaseLost({ executionId: lease.executionId }))
        }
        row.lease = { ...row.lease!, expiresAt: now + leaseMs }
        return Effect.succeed({ ...lease, expiresAt: now + leaseMs })
      }),
    release: (lease) =>
      Effect.suspend(() => {
        const row = rows.get(lease.executionId)
        if (!isCurrent(row, lease)) return Effect.void
        row.lease = null
        row.attempts -= 1
        return Queue.offer(wake, undefined)
      }),
    cancelRequested: (workerId) =>
      Effect.map(currentTime, (now) => {
        const found: Array<ExecutionRecord.ExecutionRecord["executionId"]> = []
        for (const id of open) {
          const row = rows.get(id)!
          if (
            row.cancelRequested && row.lease !== null && row.lease.workerId === workerId && row.lease.expiresAt > now
          ) {
            found.push(row.record.executionId)
          }
        }
        return found
      }),
    awaitWork: Queue.take(wake)
  }

  const webhooks: WebhookOutbox.WebhookOutbox["Type"] = {
    claimDue: (limit, leaseMs) =>
      Effect.map(currentTime, (now) => {
        const due = [...outbox.values()]
          .filter((e) => e.status === "pending" && e.nextAttemptAt <= now)
          .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || a.createdAt - b.createdAt)
          .slice(0, limit)
        const claimed = due.map((entry) => ({ ...entry, nextAttemptAt: now + leaseMs }))
        for (const entry of claimed) outbox.set(entry.deliveryId, entry)
        return claimed
      }),
    recordAttempt: (claim, attempt, next) =>
      Effect.sync(() => {
        const entry = outbox.get(claim.deliveryId)
        // Only while the claim is current, as in the SQL adapters.
        if (entry === undefined || entry.status !== "pending" || entry.nextAttemptAt !== claim.nextAttemptAt) {
          return false
        }
        outbox.set(claim.deliveryId, {
          ...entry,
          attempts: [...entry.attempts, attempt],
          ...("final" in next ? { status: next.final } : { nextAttemptAt: next.retryAt })
        })
        return true
      }),
    forExecution: (executionId) =>
      Effect.sync(() =>
        [...outbox.values()].filter((e) => e.executionId === executionId).sort((a, b) => a.createdAt - b.createdAt)
      )
  }

  return Context.make(ExecutionStore.ExecutionStore, store).pipe(
    Context.add(ExecutionQueue.ExecutionQueue, queue),
    Context.add(WebhookOutbox.WebhookOutbox, webhooks)
  )
})

/** Layer of fresh in-memory execution storage. */
export const layer = Layer.effectContext(make)
