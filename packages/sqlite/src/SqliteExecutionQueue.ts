/**
 * `ExecutionQueue` on SQLite. The lease lives on the execution's row (`lease_worker`,
 * `lease_token`, `lease_expires_at`); "now" is read from `Clock` and bound as a parameter. A claim
 * writes the lease alone (the run writes the start, with its end when both come in one turn).
 *
 * A claim runs inside `BEGIN IMMEDIATE` (a group commit, see `SqliteClient.batched`): the write lock
 * is taken before any row is chosen, so two connections, in one process or in two, never claim the
 * same execution. It walks the workspaces with claimable work in id order from where this
 * process's previous claim stopped, taking the oldest claimable execution of each in turn
 * (`UPDATE … WHERE seq = ? RETURNING *`), so a batch of claims is shared across workspaces;
 * when one workspace alone has work (the common case), its oldest are claimed in one `UPDATE`.
 */
import { Errors, ExecutionQueue } from "@appexec/core"
import { PreparedQuery, SqlExecutionQueue } from "@appexec/sql"
import { claimsOf, type ExecutionRow } from "@appexec/sql/ExecutionRows"
import type { Tables } from "@appexec/sql/SqlTables"
import { Clock, Effect, Layer } from "effect"
import { type Expression, type ExpressionBuilder, sql, type SqlBool } from "kysely"
import { WorkSignal } from "./internal/WorkSignal.js"
import { type Connection, SqliteClient } from "./SqliteClient.js"

/** The queue over the instance's connection; releases wake this process's idle workers. */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient
  const signal = yield* WorkSignal
  const db = client.builder

  /**
   * Which claimable executions a claim may take, beyond the claimable ones: those of the workflow
   * versions the worker runs (a JSON array; null: all), of apps not at their cap and of versions
   * whose resource is not at its cap (JSON arrays of those that are: `ClaimCaps`). Unused when
   * none of them applies (`unfiltered`).
   */
  type Filter = { workflows: string | null; fullApps: string; fullWorkflows: string }
  const filtered = (p: PreparedQuery.Param<Filter>) => (w: ExpressionBuilder<Tables, "executions">) =>
    w.and([
      w.or([
        w(sql<string | null>`${p("workflows")}`, "is", null),
        w("workflow_id", "in", sql<string>`(select value from json_each(${p("workflows")}))`)
      ]),
      w("app_id", "not in", sql<string>`(select value from json_each(${p("fullApps")}))`),
      w("workflow_id", "not in", sql<string>`(select value from json_each(${p("fullWorkflows")}))`)
    ])

  /** The first claimable execution, in queue order, of the first workspace after `cursor` that has one. */
  const nextOf = (filter: boolean) =>
    PreparedQuery.make((p: PreparedQuery.Param<{ cursor: string; now: number } & Filter>) => {
      const query = db
        .selectFrom("executions")
        .select(["seq", "workspace_id", "app_id", "workflow_id"])
        // Literals, not parameters: only then can SQLite use the partial index `executions_open_by_workspace`.
        .where("status", "in", [sql.lit("queued"), sql.lit("running")])
        .where("workspace_id", ">", p("cursor"))
        .where((w) => w.or([w("lease_expires_at", "is", null), w("lease_expires_at", "<=", p("now"))]))
      return (filter ? query.where(filtered(p)) : query)
        .orderBy("workspace_id")
        .orderBy("queue_at")
        .orderBy("seq")
        // A literal too: with `LIMIT ?` SQLite takes several times longer to find the first row.
        .limit(sql.lit(1))
    })
  const next = nextOf(false)
  const nextFiltered = nextOf(true)
  /**
   * The first claimable executions in queue order from one workspace on (the caller keeps that
   * workspace's). A range, as in `next`, rather than `workspace_id = ?`: with an equality SQLite
   * would take the index of every execution of the workspace, finished ones included, and read
   * past them all.
   */
  const oldestOfLimit = (limit: number, filter: boolean) =>
    PreparedQuery.make((p: PreparedQuery.Param<{ workspaceId: string; now: number } & Filter>) => {
      const query = db
        .selectFrom("executions")
        .select(["seq", "workspace_id", "app_id", "workflow_id"])
        .where("status", "in", [sql.lit("queued"), sql.lit("running")])
        .where("workspace_id", ">=", p("workspaceId"))
        .where((w) => w.or([w("lease_expires_at", "is", null), w("lease_expires_at", "<=", p("now"))]))
      return (filter ? query.where(filtered(p)) : query)
        .orderBy("workspace_id")
        .orderBy("queue_at")
        .orderBy("seq")
        // The limit as a literal, as in `next`: one statement per limit (at most a claim batch's).
        .limit(sql.lit(limit))
    })
  const oldestOfByLimit = new Map<string, ReturnType<typeof oldestOfLimit>>()
  const oldestOf = (
    params: { readonly workspaceId: string; readonly now: number; readonly limit: number },
    filter: Filter | undefined
  ) => {
    const limit = Number.isSafeInteger(params.limit) && params.limit > 0 ? params.limit : 1
    const key = `${limit}${filter === undefined ? "" : "f"}`
    let query = oldestOfByLimit.get(key)
    if (query === undefined) {
      query = oldestOfLimit(limit, filter !== undefined)
      oldestOfByLimit.set(key, query)
    }
    return query.bind({ workspaceId: params.workspaceId, now: params.now, ...(filter ?? unfiltered) })
  }
  const unfiltered: Filter = { workflows: null, fullApps: "[]", fullWorkflows: "[]" }
  const nextRow = (c: Connection, cursor: string, now: number, filter: Filter | undefined) =>
    filter === undefined
      ? c.get(next.bind({ cursor, now, ...unfiltered }))
      : c.get(nextFiltered.bind({ cursor, now, ...filter }))
  /**
   * How many executions hold live leases among those `among` picks (for the caps): of a workspace,
   * of an app, or of some workflow versions (their ids as one JSON array).
   */
  const liveAmong = (
    among: (
      p: PreparedQuery.Param<{ id: string }>
    ) => (w: ExpressionBuilder<Tables, "executions">) => Expression<SqlBool>
  ) =>
    PreparedQuery.make((p: PreparedQuery.Param<{ id: string; now: number }>) =>
      db
        .selectFrom("executions")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("status", "in", [sql.lit("queued"), sql.lit("running")])
        .where((w) => w.and([among(p)(w), w("lease_expires_at", ">", p("now"))]))
    )
  const live = liveAmong((p) => (w) => w("workspace_id", "=", p("id")))
  const liveOfApp = liveAmong((p) => (w) => w("app_id", "=", p("id")))
  const liveOfWorkflows = liveAmong((p) => (w) =>
    w("workflow_id", "in", sql<string>`(select value from json_each(${p("id")}))`)
  )
  type LeaseParams = { workerId: string; expiresAt: number }
  const lease = (p: PreparedQuery.Param<LeaseParams>) => (eb: ExpressionBuilder<Tables, "executions">) => ({
    claims: eb("claims", "+", 1),
    attempts: eb("attempts", "+", 1),
    lease_token: eb("claims", "+", 1),
    lease_worker: p("workerId"),
    lease_expires_at: p("expiresAt")
  })
  const claimOne = PreparedQuery.make((p: PreparedQuery.Param<LeaseParams & { seq: number }>) =>
    db.updateTable("executions").set(lease(p)).where("seq", "=", p("seq")).returningAll()
  )
  // Several rows at once: their `seq`s travel as one JSON array, so one statement serves any number.
  const inSeqs = (p: PreparedQuery.Param<{ seqs: string }>) => sql<number>`(select value from json_each(${p("seqs")}))`
  const claimMany = PreparedQuery.make((p: PreparedQuery.Param<LeaseParams & { seqs: string }>) =>
    db.updateTable("executions").set(lease(p)).where("seq", "in", inSeqs(p)).returningAll()
  )
  /** Where the previous claim of this process stopped in the round robin over workspaces. */
  let cursor = ""

  /** Rows claimed together, back in queue order (RETURNING comes in no promised order). */
  const inOrder = (rows: ReadonlyArray<ExecutionRow>, seqs: ReadonlyArray<number>) => {
    const at = new Map(seqs.map((seq, i) => [seq, i]))
    return [...rows].sort((a, b) => at.get(a.seq)! - at.get(b.seq)!)
  }

  /**
   * Claims up to `limit` executions on the connection, one workspace after the other from
   * `cursor`, starting over at the first workspace until a whole pass finds nothing more. Under
   * app caps, an app that reaches its cap leaves the claim's filter, so the next of its
   * workspace's executions is taken instead (the write lock keeps the counts exact).
   */
  const claimRows = (
    c: Connection,
    workerId: string,
    now: number,
    expiresAt: number,
    options: ExecutionQueue.ClaimOptions
  ): Array<ExecutionRow> => {
    const rows: Array<ExecutionRow> = []
    const claim = (seq: number) => claimOne.bind({ seq, workerId, expiresAt })
    const claimAll = (seqs: ReadonlyArray<number>) =>
      inOrder(c.all(claimMany.bind({ seqs: JSON.stringify(seqs), workerId, expiresAt })), seqs)
    const caps = new ExecutionQueue.ClaimCaps(options)
    for (const count of caps.counts) {
      const n = count._tag === "app"
        ? c.get(liveOfApp.bind({ id: count.appId, now }))?.n
        : c.get(liveOfWorkflows.bind({ id: JSON.stringify(count.workflows), now }))?.n
      caps.start(count, n ?? 0)
    }
    const workflows = options.workflows === undefined ? null : JSON.stringify(options.workflows)
    const filterNow = (): Filter => ({
      workflows,
      fullApps: JSON.stringify(caps.fullApps),
      fullWorkflows: JSON.stringify(caps.fullWorkflows)
    })
    let filter: Filter | undefined = workflows === null && !caps.any ? undefined : filterNow()
    if (!ExecutionQueue.isCapped(options)) {
      // Nearly always one workspace alone has claimable work (one tenant, or a burst of one): two
      // reads tell, and its first are then taken at once, rather than one per turn of the round.
      const first = nextRow(c, "", now, filter)
      if (first === undefined) return rows
      const only = first.workspace_id
      if (nextRow(c, only, now, filter) === undefined) {
        cursor = only
        const seqs = options.limit === 1
          ? [first.seq]
          : c.all(oldestOf({ workspaceId: only, now, limit: options.limit }, filter))
            .filter((row) => row.workspace_id === only)
            .map((row) => row.seq)
        // One UPDATE for them all, in claim order.
        if (seqs.length > 1) return claimAll(seqs)
        const row = seqs.length === 1 ? c.get(claim(seqs[0]!)) : undefined
        return row === undefined ? rows : [row]
      }
    }
    const running = new Map<string, number>()
    let claimedThisPass = 0
    let passes = 0
    /** The workspaces met in this pass, while there is only one: then the rest comes from it in one query. */
    let only: string | undefined
    let several = false
    while (rows.length < options.limit) {
      const found = nextRow(c, cursor, now, filter)
      if (found === undefined) {
        // A whole pass from the first workspace met one workspace alone: no other has work, so
        // the rest of the batch is that workspace's first, read at once rather than one per pass
        // (not under app caps, which each claim may change).
        if (
          cursor !== "" && passes > 0 && !several && only !== undefined && claimedThisPass > 0 && !caps.any
        ) {
          const left = options.limit - rows.length
          const cap = ExecutionQueue.workspaceCap(options, only)
          const allowed = cap === undefined ? left : Math.min(left, cap - (running.get(only) ?? 0))
          if (allowed > 0) {
            const seqs: Array<number> = []
            for (const more of c.all(oldestOf({ workspaceId: only, now, limit: allowed }, filter))) {
              if (more.workspace_id !== only) break
              seqs.push(more.seq)
            }
            if (seqs.length > 0) rows.push(...claimAll(seqs))
          }
          break
        }
        if (cursor === "" || (passes > 0 && claimedThisPass === 0)) break
        passes += 1
        claimedThisPass = 0
        only = undefined
        several = false
        cursor = ""
        continue
      }
      cursor = found.workspace_id
      if (only === undefined) only = cursor
      else if (only !== cursor) several = true
      const cap = ExecutionQueue.workspaceCap(options, cursor)
      if (cap !== undefined) {
        const count = running.get(cursor) ?? c.get(live.bind({ id: cursor, now }))?.n ?? 0
        if (count >= cap) {
          running.set(cursor, count)
          continue
        }
        running.set(cursor, count + 1)
      }
      const row = c.get(claim(found.seq))
      if (row !== undefined) rows.push(row)
      claimedThisPass += 1
      if (caps.took(found.app_id, found.workflow_id)) filter = filterNow()
    }
    return rows
  }

  type Fence = { executionId: string; token: number; workerId: string }
  const renew = PreparedQuery.make((p: PreparedQuery.Param<Fence & { now: number; expiresAt: number }>) =>
    db
      .updateTable("executions")
      .set({ lease_expires_at: p("expiresAt") })
      .where("execution_id", "=", p("executionId"))
      .where("lease_token", "=", p("token"))
      .where("lease_worker", "=", p("workerId"))
      .where("lease_expires_at", ">", p("now"))
  )
  const release = PreparedQuery.make((p: PreparedQuery.Param<Fence>) =>
    SqlExecutionQueue.release(db, { executionId: p("executionId"), workerId: p("workerId"), token: p("token") })
  )

  // Every claim of every worker: no generator.
  const claimBatch = (workerId: string, leaseMs: number, options: ExecutionQueue.ClaimOptions) =>
    Effect.flatMap(
      Clock.currentTimeMillis,
      (now) =>
        Effect.flatMap(
          client.batched("claim executions", (c) => claimRows(c, workerId, now, now + leaseMs, options)),
          claimsOf
        )
    )

  const neutral = yield* SqlExecutionQueue.make
  const service: ExecutionQueue.ExecutionQueue["Type"] = {
    ...neutral,
    claimBatch: claimBatch,
    renew: (lease, leaseMs) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const changed = yield* client.execute("renew lease", (c) =>
          c.run(renew.bind({ ...lease, now, expiresAt: now + leaseMs })))
        if (changed === 0) {
          return yield* new Errors.LeaseLost({ executionId: lease.executionId })
        }
        return { ...lease, expiresAt: now + leaseMs }
      }),
    renewAll: (leases, leaseMs) =>
      leases.length === 0 ?
        Effect.succeed([]) :
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          client.transaction("renew leases", (c) => {
            const expiresAt = now + leaseMs
            const renewed: Array<ExecutionQueue.Lease> = []
            for (const lease of leases) {
              if (c.run(renew.bind({ ...lease, now, expiresAt })) > 0) renewed.push({ ...lease, expiresAt })
            }
            return renewed
          })),
    release: (lease) =>
      Effect.gen(function*() {
        const changed = yield* client.execute("release lease", (c) => c.run(release.bind(lease)))
        if (changed > 0) yield* signal.notify
      }),
    awaitWork: signal.wait
  }
  return service
})

/** Layer of the queue; needs the connection and the work signal (see `SqliteStorage`). */
export const layer = Layer.effect(ExecutionQueue.ExecutionQueue, make)
