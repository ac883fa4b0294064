/**
 * `ExecutionStore` on SQL, the part every dialect shares: reads of executions and their views,
 * listings and pages, retention and cancel requests. An adapter adds its writes under leases and
 * with their wake-ups (`insert`, `insertIdempotent`, `save`, `cancelQueued`), which group their
 * commits and fence their rows in the dialect's own statements.
 */
import { ExecutionId } from "@appexec/api/Ids"
import type { ExecutionStore } from "@appexec/core"
import { Effect, Option } from "effect"
import { type Expression, sql } from "kysely"
import { executionColumns, fromRow, viewColumns, viewOfRow } from "./ExecutionRows.js"
import * as PreparedQuery from "./PreparedQuery.js"
import { SqlRunner } from "./SqlRunner.js"

/** What an adapter adds: the writes that take or hold a lease, or wake workers. */
export type Writes = "insert" | "insertIdempotent" | "save" | "cancelQueued"

/** The dialect-neutral part of the store. */
export type Neutral = Omit<ExecutionStore.ExecutionStore["Type"], Writes>

/** Statuses of finished executions, as SQL literals (so the partial indexes apply). */
export const FINISHED = [sql.lit("completed"), sql.lit("failed")]

/** The status of queued executions, as an SQL literal (so the partial indexes apply). */
export const QUEUED = sql.lit("queued")

/** Statuses of open executions, as SQL literals (so the partial indexes apply). */
export const OPEN = [sql.lit("queued"), sql.lit("running")]

/** 1 for a row whose lease ends after `now` (a live lease), 0 for the others (none, given back or run out). */
const liveLease = (leaseExpiresAt: Expression<number | null>, now: number) =>
  sql<number>`case when ${leaseExpiresAt} > ${now} then 1 else 0 end`

/**
 * The unfinished rows of a group counted by their leases (`ExecutionStore.OpenCounts`,
 * `OperatorViews.WorkspaceLoad`): `running` those whose lease ends after `now`, `queued` the others
 * (no lease, a lease given back or run out), whatever their status says.
 */
export const openCounts = (leaseExpiresAt: Expression<number | null>, now: number) =>
  [
    sql<number>`sum(1 - ${liveLease(leaseExpiresAt, now)})`.as("queued"),
    sql<number>`sum(${liveLease(leaseExpiresAt, now)})`.as("running")
  ] as const

/** The least `createdAt` of a group's rows that `openCounts` counts as queued; null when none is. */
const oldestQueued = (leaseExpiresAt: Expression<number | null>, createdAt: Expression<number>, now: number) =>
  sql<number | null>`min(case when ${liveLease(leaseExpiresAt, now)} = 0 then ${createdAt} end)`.as("oldest")

/** Every status, each a branch of a page of a workspace's executions whatever their status. */
const STATUSES = ["queued", "running", "completed", "failed"] as const

/** The dialect-neutral part of the store, over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const { builder: db, dialect } = runner
  const executions = db.selectFrom("executions")
  /**
   * The newest `limit` executions of a workspace below `before`, whatever their status: the
   * newest of each status, read backwards along `executions_workspace_status` (its prefix the
   * workspace and the status, `seq` last), merged. So a page costs at most four times its rows
   * whatever the history, and the executions need no index by workspace alone, which every start
   * would write (dropped by SQLite's 0011 and PostgreSQL's 0010).
   */
  const newestOfWorkspace = (workspaceId: string, before: number | undefined, limit: number) => {
    const branches = STATUSES.map((status) => {
      let branch = executions.select(executionColumns).where("workspace_id", "=", workspaceId).where(
        "status",
        "=",
        sql.lit(status)
      )
      if (before !== undefined) branch = branch.where("seq", "<", before)
      // Wrapped, as each member of a compound SELECT must be to have its own ORDER BY and LIMIT.
      return db.selectFrom(branch.orderBy("seq", "desc").limit(limit).as("branch")).selectAll()
    })
    const merged = branches.slice(1).reduce((all, branch) => all.unionAll(branch), branches[0]!)
    return db.selectFrom(merged.as("newest")).selectAll().orderBy("seq", "desc").limit(limit)
  }
  // Every column by name: a prepared `*` would break when a later migration adds a column.
  const get = PreparedQuery.make((p: PreparedQuery.Param<{ executionId: string }>) =>
    executions.select(executionColumns).where("execution_id", "=", p("executionId"))
  )
  const getView = PreparedQuery.make((p: PreparedQuery.Param<{ executionId: string }>) =>
    executions.select(viewColumns).where("execution_id", "=", p("executionId"))
  )
  // The ids travel as one parameter, so one prepared statement serves any number of them.
  const finished = PreparedQuery.make((p: PreparedQuery.Param<{ ids: unknown }>) =>
    executions
      .select("execution_id")
      .where(dialect.oneOf("execution_id", p("ids")))
      .where("status", "in", FINISHED)
  )
  const views = PreparedQuery.make((p: PreparedQuery.Param<{ ids: unknown }>) =>
    executions.select(viewColumns).where(dialect.oneOf("execution_id", p("ids")))
  )
  // The queued executions of its workspace before it in claim order (`queue_at`, then `seq`): a
  // range of `executions_workspace_status`.
  const queuePosition = PreparedQuery.make((p: PreparedQuery.Param<{ executionId: string }>) =>
    db
      .selectFrom("executions as mine")
      .innerJoin("executions as ahead", (join) =>
        join.onRef("ahead.workspace_id", "=", "mine.workspace_id").on((eb) =>
          eb.or([
            eb("ahead.queue_at", "<", eb.ref("mine.queue_at")),
            eb.and([eb("ahead.queue_at", "=", eb.ref("mine.queue_at")), eb("ahead.seq", "<", eb.ref("mine.seq"))])
          ])
        ))
      .select(db.fn.countAll<number>().as("n"))
      .where("mine.execution_id", "=", p("executionId"))
      .where("mine.status", "=", QUEUED)
      .where("ahead.status", "=", QUEUED)
  )
  const requestCancel = PreparedQuery.make((p: PreparedQuery.Param<{ executionId: string; at: number }>) =>
    db
      .updateTable("executions")
      .set({ cancel_requested_at: p("at") })
      .where("execution_id", "=", p("executionId"))
      .where("status", "in", OPEN)
  )

  const service: Neutral = {
    // Every poll reads one: untraced.
    get: (executionId) =>
      Effect.flatMap(
        runner.first("get execution", get.bind({ executionId })),
        (row) => (row === undefined ? Effect.succeedNone : Effect.map(fromRow(row), Option.some))
      ),
    getView: (executionId) =>
      Effect.flatMap(
        runner.first("get execution view", getView.bind({ executionId })),
        (row) => (row === undefined ? Effect.succeedNone : Effect.map(viewOfRow(row), Option.some))
      ),
    finishedAmong: (executionIds) =>
      executionIds.length === 0
        ? Effect.succeed([])
        : Effect.map(
          runner.all("finished executions", finished.bind({ ids: dialect.list(executionIds) })),
          (rows) => rows.map((row) => ExecutionId.make(row.execution_id))
        ),
    viewsAmong: (executionIds) =>
      executionIds.length === 0
        ? Effect.succeed([])
        : Effect.flatMap(
          runner.all("execution views", views.bind({ ids: dialect.list(executionIds) })),
          (rows) => Effect.forEach(rows, viewOfRow)
        ),
    list: Effect.fn("SqlExecutionStore.list")(({ limit, status, workspaceId }) => {
      let query = executions.select(executionColumns).orderBy("seq", "desc").limit(limit)
      if (workspaceId !== undefined) query = query.where("workspace_id", "=", workspaceId)
      if (status !== undefined) query = query.where("status", "=", status)
      return Effect.flatMap(
        runner.all(
          "list executions",
          workspaceId !== undefined && status === undefined ? newestOfWorkspace(workspaceId, undefined, limit) : query
        ),
        (rows) => Effect.forEach(rows, fromRow)
      )
    }),
    // Read backwards along `executions_workspace_status` or `executions_workspace_app` (the
    // equalities are their prefix, `seq` their last column), or by each status (`newestOfWorkspace`).
    page: Effect.fn("SqlExecutionStore.page")(({ appId, before, limit, status, workspaceId }) => {
      let query = executions.select(executionColumns).where("workspace_id", "=", workspaceId)
      if (status !== undefined) query = query.where("status", "=", status)
      if (appId !== undefined) query = query.where("app_id", "=", appId)
      if (before !== undefined) query = query.where("seq", "<", before)
      // One more than asked: whether a page follows, without reading it.
      return Effect.flatMap(
        runner.all(
          "page executions",
          status === undefined && appId === undefined
            ? newestOfWorkspace(workspaceId, before, limit + 1)
            : query.orderBy("seq", "desc").limit(limit + 1)
        ),
        (rows) => {
          const kept = rows.length > limit ? rows.slice(0, limit) : rows
          return Effect.map(Effect.forEach(kept, fromRow), (records) => ({
            executions: records,
            next: rows.length > limit ? Number(kept[kept.length - 1]!.seq) : null
          }))
        }
      )
    }),
    finishedBefore: Effect.fn("SqlExecutionStore.finishedBefore")((cutoff, limit) =>
      Effect.map(
        runner.all(
          "find expired executions",
          executions
            .select("execution_id")
            .where("status", "in", FINISHED)
            .where("completed_at", "<", cutoff)
            .orderBy("completed_at")
            .limit(limit)
        ),
        (rows) => rows.map((row) => ExecutionId.make(row.execution_id))
      )
    ),
    deleteFinished: Effect.fn("SqlExecutionStore.deleteFinished")((executionIds) => {
      if (executionIds.length === 0) return Effect.succeed(0)
      const ids = [...executionIds]
      const finishedIds = executions
        .select("execution_id")
        .where("execution_id", "in", ids)
        .where("status", "in", FINISHED)
      return runner.transaction("delete executions", [
        db.deleteFrom("webhook_outbox").where("execution_id", "in", finishedIds),
        db.deleteFrom("execution_reports").where("execution_id", "in", finishedIds),
        db.deleteFrom("execution_logs").where("execution_id", "in", finishedIds),
        db.deleteFrom("executions").where("execution_id", "in", ids).where("status", "in", FINISHED)
      ]).pipe(Effect.map((changed) => changed[3] ?? 0))
    }),
    // Every poll of a queued execution reads it: untraced.
    queuePosition: (executionId) =>
      Effect.map(
        runner.first("queue position", queuePosition.bind({ executionId })),
        (row) => Number(row?.n ?? 0)
      ),
    countOpen: Effect.fn("SqlExecutionStore.countOpen")((now) =>
      Effect.map(
        runner.first(
          "count open executions",
          // One row over the open executions; the oldest queued `created_at` from the rows it reads already.
          executions
            .select((eb) => [
              ...openCounts(eb.ref("lease_expires_at"), now),
              oldestQueued(eb.ref("lease_expires_at"), eb.ref("created_at"), now)
            ])
            .where("status", "in", OPEN)
        ),
        (row) => ({
          queued: Number(row?.queued ?? 0),
          running: Number(row?.running ?? 0),
          oldestQueuedAt: row?.oldest === undefined || row.oldest === null ? null : Number(row.oldest)
        })
      )
    ),
    requestCancel: Effect.fn("SqlExecutionStore.requestCancel")((executionId, at) =>
      Effect.map(runner.run("request cancel", requestCancel.bind({ executionId, at })), (changed) => changed > 0)
    )
  }
  return service
})
