/**
 * `OperatorViews` on SQL, for every dialect: counts grouped in the database, so a view reads a
 * row per workspace, app, minute or worker, never the executions themselves. Finished executions are
 * counted through the partial index `executions_finished`, unfinished ones through
 * `executions_open_by_workspace` (their conditions are repeated with literals, so SQLite can use
 * them), each of these counted as running or queued by its lease (`openCounts`); workers are the
 * `lease_worker`s of unfinished executions (the process ids of `ProcessRegistry`).
 */
import { Ids } from "@appexec/api"
import { OperatorViews } from "@appexec/core"
import { Effect, Layer } from "effect"
import { type Expression, type NotNull, type RawBuilder, sql } from "kysely"
import { outboxEntryOfRow, trusted } from "./RowMapping.js"
import { OPEN, openCounts } from "./SqlExecutionStore.js"
import { SqlRunner } from "./SqlRunner.js"

const COMPLETED = sql.lit("completed")
const FAILED = sql.lit("failed")

/** How many of a group's rows have `status` equal to `value`. */
const countWhere = (status: Expression<string>, value: RawBuilder<string>) =>
  sql<number>`sum(case when ${status} = ${value} then 1 else 0 end)`

/** The views over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const db = runner.builder

  const service: OperatorViews.OperatorViews["Type"] = {
    workspaceLoad: Effect.fn("SqlOperatorViews.workspaceLoad")((now) =>
      Effect.map(
        runner.all(
          "operator: workspace load",
          db
            .selectFrom("executions")
            .leftJoin("workspaces", "workspaces.workspace_id", "executions.workspace_id")
            .select((eb) => [
              "executions.workspace_id as workspace_id",
              eb.fn.max("workspaces.name").as("name"),
              ...openCounts(eb.ref("executions.lease_expires_at"), now)
            ])
            .where("executions.status", "in", OPEN)
            .groupBy("executions.workspace_id")
            .orderBy("executions.workspace_id")
        ),
        (rows) =>
          rows.map((row): OperatorViews.WorkspaceLoad => ({
            workspaceId: Ids.WorkspaceId.make(row.workspace_id, trusted),
            name: row.name ?? null,
            queued: Number(row.queued),
            running: Number(row.running)
          }))
      )
    ),
    appLoad: Effect.fn("SqlOperatorViews.appLoad")((now) =>
      Effect.map(
        runner.all(
          "operator: app load",
          db
            .selectFrom("executions")
            .select((eb) => [
              "app_id",
              "workflow_id",
              ...openCounts(eb.ref("lease_expires_at"), now)
            ])
            .where("status", "in", OPEN)
            .groupBy(["app_id", "workflow_id"])
            .orderBy("app_id")
            .orderBy("workflow_id")
        ),
        (rows) =>
          rows.map((row): OperatorViews.AppLoad => ({
            appId: Ids.AppId.make(row.app_id, trusted),
            workflowId: Ids.WorkflowId.make(row.workflow_id, trusted),
            queued: Number(row.queued),
            running: Number(row.running)
          }))
      )
    ),
    finishedPerBucket: Effect.fn("SqlOperatorViews.finishedPerBucket")((since, until, bucketMs) =>
      Effect.map(
        runner.all(
          "operator: finished per bucket",
          db
            .selectFrom("executions")
            .select((eb) => [
              // The bucket's number (cast: a parameter may be bound as a float, and the division with it).
              sql<number>`cast((${eb.ref("completed_at")} - ${since}) / ${bucketMs} as integer)`.as("bucket"),
              countWhere(eb.ref("status"), COMPLETED).as("completed"),
              countWhere(eb.ref("status"), FAILED).as("failed")
            ])
            .where("status", "in", [COMPLETED, FAILED])
            .where("completed_at", ">=", since)
            .where("completed_at", "<", until)
            .groupBy(sql.ref("bucket"))
            .orderBy(sql.ref("bucket"))
        ),
        (rows) =>
          rows.map((row): OperatorViews.FinishedBucket => ({
            start: since + Number(row.bucket) * bucketMs,
            completed: Number(row.completed),
            failed: Number(row.failed)
          }))
      )
    ),
    leaseHolders: Effect.map(
      runner.all(
        "operator: lease holders",
        db
          .selectFrom("executions")
          .select((eb) => [
            "lease_worker",
            eb.fn.countAll<number>().as("held"),
            eb.fn.max("lease_expires_at").as("lease_expires_at")
          ])
          .where("status", "in", OPEN)
          .where("lease_worker", "is not", null)
          // The condition above: no row without a worker.
          .$narrowType<{ lease_worker: NotNull }>()
          .groupBy("lease_worker")
          .orderBy("lease_worker")
      ),
      (rows) =>
        rows.map((row): OperatorViews.LeaseHolder => ({
          workerId: row.lease_worker,
          held: Number(row.held),
          leaseExpiresAt: Number(row.lease_expires_at ?? 0)
        }))
    ),
    holdersOf: Effect.fn("SqlOperatorViews.holdersOf")((executionIds, now) =>
      executionIds.length === 0
        ? Effect.succeed(new Map<string, string>())
        : Effect.map(
          runner.all(
            "operator: lease holders of executions",
            db
              .selectFrom("executions")
              .select(["execution_id", "lease_worker"])
              .where("execution_id", "in", executionIds)
              .where("status", "in", OPEN)
              .where("lease_worker", "is not", null)
              .where("lease_expires_at", ">", now)
              .$narrowType<{ lease_worker: NotNull }>()
          ),
          (rows) => new Map(rows.map((row) => [row.execution_id, row.lease_worker]))
        )
    ),
    failedDeliveries: Effect.fn("SqlOperatorViews.failedDeliveries")((limit) =>
      Effect.flatMap(
        runner.all(
          "operator: failed deliveries",
          db
            .selectFrom("webhook_outbox")
            .innerJoin("executions", "executions.execution_id", "webhook_outbox.execution_id")
            .leftJoin("workspaces", "workspaces.workspace_id", "executions.workspace_id")
            .selectAll("webhook_outbox")
            .select([
              "executions.workspace_id as workspace_id",
              "executions.app_id as app_id",
              "workspaces.name as workspace_name"
            ])
            .where("webhook_outbox.status", "=", FAILED)
            .orderBy("webhook_outbox.created_at", "desc")
            .orderBy("webhook_outbox.seq", "desc")
            .limit(limit)
        ),
        (rows) =>
          Effect.forEach(rows, (row) =>
            Effect.map(outboxEntryOfRow(row), (entry): OperatorViews.FailedDelivery => ({
              entry,
              workspaceId: Ids.WorkspaceId.make(row.workspace_id, trusted),
              workspaceName: row.workspace_name ?? null,
              appId: Ids.AppId.make(row.app_id, trusted)
            })))
      )
    )
  }
  return service
})

/** Layer of the views; needs the runner of an adapter. */
export const layer = Layer.effect(OperatorViews.OperatorViews, make)
