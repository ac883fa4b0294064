/**
 * In-memory `ExecutionStore`, `ExecutionQueue` and `WebhookOutbox` over one shared state, so a
 * terminal save and its outbox entry are one atomic step, as in the SQL adapters; and the
 * `OperatorViews` that read it (with no workspace names: workspaces live in the key store).
 */
import {
  Errors,
  ExecutionQueue,
  ExecutionRecord,
  ExecutionReports,
  ExecutionStore,
  OperatorViews,
  WebhookOutbox
} from "@appexec/core"
import { Context, Effect, Either, Layer, Option, Queue } from "effect"
import { currentTime, isFinished, isLive, recordOf, type Row } from "./internal/ExecutionRows.js"
import * as MemoryOutbox from "./internal/MemoryOutbox.js"
import * as MemoryViews from "./internal/MemoryViews.js"
import * as MemoryReports from "./MemoryReports.js"

/** Fresh in-memory execution storage: a context with the store, the queue and the outbox. */
export const make = Effect.gen(function*() {
  const rows = new Map<string, Row>()
  /** Non-terminal executions per workspace, each in insertion (creation) order: the only ones a claim looks at. */
  const open = new Map<string, Set<string>>()
  /** Where the previous claim stopped in the round robin over workspaces. */
  let cursor = ""
  const outbox = new Map<string, WebhookOutbox.OutboxEntry>()
  /** Idempotency keys by workspace and key. */
  const idempotency = new Map<
    string,
    ExecutionStore.IdempotencyKey & { readonly executionId: ExecutionRecord.ExecutionRecord["executionId"] }
  >()
  const wake = yield* Queue.sliding<void>(1)
  /** Offered when a redelivery arms an entry: what `awaitDue` waits for. */
  const armed = yield* Queue.sliding<void>(1)
  let inserted = 0
  const reports = MemoryReports.make()

  const isCurrent = (row: Row | undefined, lease: ExecutionQueue.Lease): row is Row =>
    row !== undefined && row.lease !== null && row.lease.token === lease.token && row.lease.workerId === lease.workerId

  /** Claim order within a workspace: `queueAtOf` (priority, then age), then acceptance. */
  const inQueueOrder = (a: Row, b: Row) =>
    ExecutionRecord.queueAtOf(a.record) - ExecutionRecord.queueAtOf(b.record) || a.seq - b.seq

  /** Takes a finished execution out of the claimable ones. */
  const closeOpen = (record: ExecutionRecord.ExecutionRecord) => {
    const ids = open.get(record.workspaceId)
    ids?.delete(record.executionId)
    if (ids?.size === 0) open.delete(record.workspaceId)
  }

  const insert = (record: ExecutionRecord.ExecutionRecord) =>
    Effect.suspend(() => {
      inserted += 1
      rows.set(record.executionId, {
        seq: inserted,
        record,
        lease: null,
        attempts: 0,
        claims: 0,
        cancelRequested: false
      })
      let ids = open.get(record.workspaceId)
      if (ids === undefined) open.set(record.workspaceId, ids = new Set())
      ids.add(record.executionId)
      return Queue.offer(wake, undefined)
    })

  /** One save, done now: `LeaseLost` when the lease is no longer current, and nothing written. */
  const saveNow = (
    record: ExecutionRecord.ExecutionRecord,
    lease: ExecutionQueue.Lease,
    entry: WebhookOutbox.OutboxEntry | undefined
  ): Either.Either<void, Errors.LeaseLost> => {
    const row = rows.get(record.executionId)
    if (!isCurrent(row, lease)) return Either.left(new Errors.LeaseLost({ executionId: record.executionId }))
    // What a transition changes; the rest stays as inserted (as the SQL stores' saves).
    const { completedAt, errorMessage, outputs, startedAt, status } = record
    row.record = { ...row.record, status, outputs, errorMessage, startedAt, completedAt }
    if (record.status === "completed" || record.status === "failed") {
      row.lease = null
      closeOpen(record)
      if (entry !== undefined) outbox.set(entry.deliveryId, entry)
    }
    return Either.void
  }
  const save: ExecutionStore.ExecutionStore["Type"]["save"] = (record, lease, entry) =>
    Effect.suspend(() => saveNow(record, lease, entry))

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
    get: (executionId) => Effect.sync(() => Option.map(Option.fromNullable(rows.get(executionId)), recordOf)),
    getView: (executionId) =>
      Effect.sync(() =>
        Option.map(Option.fromNullable(rows.get(executionId)), (r) => ExecutionRecord.viewOf(recordOf(r)))
      ),
    finishedAmong: (executionIds) => finishedAmong(executionIds),
    // Each view as `getView` reads it.
    viewsAmong: (executionIds) =>
      Effect.map(
        Effect.forEach(executionIds, (id) => store.getView(id)),
        (views) => views.flatMap((view) => (Option.isSome(view) ? [view.value] : []))
      ),
    save,
    saveAll: ExecutionStore.makeSaveAll(
      save,
      (saves) => Effect.sync(() => saves.map((s) => Either.isRight(saveNow(s.record, s.lease, s.outbox))))
    ),
    list: ({ limit, status, workspaceId }) =>
      Effect.sync(() => {
        const found: Array<ExecutionRecord.ExecutionRecord> = []
        // Rows are kept in insertion order: newest first is the reverse.
        for (const row of [...rows.values()].reverse()) {
          if (found.length >= limit) break
          if (workspaceId !== undefined && row.record.workspaceId !== workspaceId) continue
          if (status !== undefined && row.record.status !== status) continue
          found.push(recordOf(row))
        }
        return found
      }),
    page: ({ appId, before, limit, status, workspaceId }) =>
      Effect.sync(() => {
        const found: Array<Row> = []
        let more = false
        // Rows are kept in insertion order: newest first is the reverse.
        for (const row of [...rows.values()].reverse()) {
          if (before !== undefined && row.seq >= before) continue
          if (row.record.workspaceId !== workspaceId) continue
          if (status !== undefined && row.record.status !== status) continue
          if (appId !== undefined && row.record.appId !== appId) continue
          if (found.length === limit) {
            more = true
            break
          }
          found.push(row)
        }
        return { executions: found.map(recordOf), next: more ? found[found.length - 1]!.seq : null }
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
          reports.forget(id)
          for (const [deliveryId, entry] of outbox) if (entry.executionId === id) outbox.delete(deliveryId)
          deleted += 1
        }
        return deleted
      }),
    queuePosition: (executionId) =>
      Effect.sync(() => {
        const row = rows.get(executionId)
        if (row === undefined || row.record.status !== "queued") return 0
        let ahead = 0
        for (const id of open.get(row.record.workspaceId) ?? []) {
          const other = rows.get(id)!
          if (other !== row && other.record.status === "queued" && inQueueOrder(other, row) < 0) ahead += 1
        }
        return ahead
      }),
    countOpen: (now) =>
      Effect.sync(() => {
        let queued = 0
        let running = 0
        let oldestQueuedAt: number | null = null
        for (const ids of open.values()) {
          for (const id of ids) {
            const row = rows.get(id)!
            if (isLive(row, now)) running += 1
            else {
              queued += 1
              const { createdAt } = row.record
              if (oldestQueuedAt === null || createdAt < oldestQueuedAt) oldestQueuedAt = createdAt
            }
          }
        }
        return { queued, running, oldestQueuedAt }
      }),
    cancelQueued: (record, now, entry) =>
      Effect.sync(() => {
        const row = rows.get(record.executionId)
        if (row === undefined || row.record.status !== "queued") return false
        if (row.lease !== null && row.lease.expiresAt > now) return false
        row.record = record
        row.lease = null
        closeOpen(record)
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

  const finishedAmong: ExecutionStore.ExecutionStore["Type"]["finishedAmong"] = (executionIds) =>
    Effect.sync(() =>
      executionIds.filter((id) => {
        const status = rows.get(id)?.record.status
        return status === "completed" || status === "failed"
      })
    )

  /**
   * The first claimable execution of `workspaceId` in queue order that `options` let a claim take
   * (its workflow version accepted, its app and resources under their caps), and how many of the
   * workspace's executions hold live leases.
   */
  const scan = (
    workspaceId: string,
    now: number,
    options: ExecutionQueue.ClaimOptions,
    caps: ExecutionQueue.ClaimCaps
  ) => {
    let live = 0
    let next: Row | undefined
    for (const id of open.get(workspaceId) ?? []) {
      const row = rows.get(id)!
      if (isLive(row, now)) {
        live += 1
        continue
      }
      const { appId, workflowId } = row.record
      if (options.workflows !== undefined && !options.workflows.includes(workflowId)) continue
      if (caps.fullApps.includes(appId) || caps.fullWorkflows.includes(workflowId)) continue
      if (next === undefined || inQueueOrder(row, next) < 0) next = row
    }
    return { next, live }
  }

  /** How many executions hold live leases whose app or workflow version `holds`. */
  const liveWhere = (now: number, holds: (record: ExecutionRecord.ExecutionRecord) => boolean) => {
    let n = 0
    for (const ids of open.values()) {
      for (const id of ids) {
        const row = rows.get(id)!
        if (isLive(row, now) && holds(row.record)) n += 1
      }
    }
    return n
  }

  const claimBatch: ExecutionQueue.ExecutionQueue["Type"]["claimBatch"] = (workerId, leaseMs, options) =>
    Effect.map(currentTime, (now) => {
      const claimed: Array<ExecutionQueue.Claim> = []
      const live = new Map<string, number>()
      const caps = new ExecutionQueue.ClaimCaps(options)
      for (const count of caps.counts) {
        caps.start(
          count,
          liveWhere(now, (r) => count._tag === "app" ? r.appId === count.appId : count.workflows.includes(r.workflowId))
        )
      }
      let claimedThisPass = 0
      let passes = 0
      while (claimed.length < options.limit) {
        const workspaces = [...open.keys()].filter((w) => w > cursor).sort()
        let taken = false
        for (const workspaceId of workspaces) {
          cursor = workspaceId
          const cap = ExecutionQueue.workspaceCap(options, workspaceId)
          const { live: running, next } = scan(workspaceId, now, options, caps)
          const count = live.get(workspaceId) ?? running
          live.set(workspaceId, count)
          if (next === undefined || (cap !== undefined && count >= cap)) continue
          next.claims += 1
          next.attempts += 1
          next.lease = { workerId, token: next.claims, expiresAt: now + leaseMs }
          const execution = recordOf(next)
          live.set(workspaceId, count + 1)
          caps.took(execution.appId, execution.workflowId)
          claimed.push({
            execution,
            lease: {
              executionId: next.record.executionId,
              workerId,
              token: next.claims,
              attempt: next.claims,
              counted: next.attempts,
              expiresAt: now + leaseMs
            }
          })
          claimedThisPass += 1
          taken = true
          break
        }
        if (taken) continue
        // The end of the workspaces: start over from the first, unless a whole pass found nothing.
        if (passes > 0 && claimedThisPass === 0) break
        if (cursor === "" && workspaces.length === 0) break
        passes += 1
        claimedThisPass = 0
        cursor = ""
      }
      return claimed
    })

  const queue: ExecutionQueue.ExecutionQueue["Type"] = {
    claimBatch,
    renew: (lease, leaseMs) =>
      Effect.flatMap(currentTime, (now) => {
        const row = rows.get(lease.executionId)
        if (!isCurrent(row, lease) || row.lease!.expiresAt <= now) {
          return Effect.fail(new Errors.LeaseLost({ executionId: lease.executionId }))
        }
        row.lease = { ...row.lease!, expiresAt: now + leaseMs }
        return Effect.succeed({ ...lease, expiresAt: now + leaseMs })
      }),
    renewAll: (leases, leaseMs) =>
      Effect.map(currentTime, (now) => {
        const renewed: Array<ExecutionQueue.Lease> = []
        for (const lease of leases) {
          const row = rows.get(lease.executionId)
          if (!isCurrent(row, lease) || row.lease!.expiresAt <= now) continue
          row.lease = { ...row.lease!, expiresAt: now + leaseMs }
          renewed.push({ ...lease, expiresAt: now + leaseMs })
        }
        return renewed
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
        for (const ids of open.values()) {
          for (const id of ids) {
            const row = rows.get(id)!
            if (
              row.cancelRequested && row.lease !== null && row.lease.workerId === workerId && row.lease.expiresAt > now
            ) {
              found.push(row.record.executionId)
            }
          }
        }
        return found
      }),
    awaitWork: Queue.take(wake)
  }

  const webhooks = MemoryOutbox.make(outbox, armed)
  const views = MemoryViews.make(rows, outbox)

  return Context.make(ExecutionStore.ExecutionStore, store).pipe(
    Context.add(ExecutionQueue.ExecutionQueue, queue),
    Context.add(WebhookOutbox.WebhookOutbox, webhooks),
    Context.add(OperatorViews.OperatorViews, views),
    Context.add(ExecutionReports.ExecutionReports, reports.service)
  )
})

/** Layer of fresh in-memory execution storage. */
export const layer = Layer.effectContext(make)
