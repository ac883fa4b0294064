/**
 * `ExecutionReports` on SQL, for every dialect: reports in `execution_reports` (one row per log
 * line, and one per node for progress, replaced by the node's next), and each log's bounds and
 * drops in `execution_logs`. An append is one transaction of fixed statements, no read in
 * between: insert the reports, add the new lines to the log's counts, and only when the counts
 * pass a bound find the newest line to drop (a window over the log, newest first), count what it
 * drops and delete it. A log within its bounds costs a lookup of its counts, not a read of it.
 *
 * Telling other processes (`announce`, `announced`) is the adapter's: `layer` is for a storage
 * only one process uses.
 */
import { LogLevel } from "@appexec/api/Live"
import { Errors, ExecutionReports } from "@appexec/core"
import { Effect, Either, Layer, Schema, Stream } from "effect"
import { type Compilable, type ExpressionBuilder, type Insertable, sql } from "kysely"
import * as PreparedQuery from "./PreparedQuery.js"
import { SqlRunner } from "./SqlRunner.js"
import type { ExecutionReportsTable, Tables } from "./SqlTables.js"

type StoredReport = ExecutionReports.StoredReport

/** What an adapter adds: telling other processes. */
export type Announcements = "announce" | "announced"

/** The dialect-neutral part of the reports. */
export type Neutral = Omit<ExecutionReports.ExecutionReports["Type"], Announcements>

/** Rows per INSERT: far under either dialect's limit of bound parameters. */
const CHUNK = 500

const PROGRESS = sql.lit("progress")
const LOG = sql.lit("log")
/**
 * A preview is kept as a progress row of node `preview:<node id>` (no node id has a `:`), its media
 * type in `level` and its URL in `message`: the table's kinds are `progress` and `log` only.
 */
const PREVIEW_NODE = "preview:"

/** The row of a report (a preview's: see `PREVIEW_NODE`). */
const toRow = (executionId: string, { id, report }: StoredReport): Insertable<ExecutionReportsTable> =>
  report._tag === "Preview"
    ? {
      execution_id: executionId,
      id,
      kind: "progress",
      node_id: `${PREVIEW_NODE}${report.nodeId}`,
      level: report.mediaType,
      fraction: 0,
      message: report.url,
      message_length: 0,
      at: report.at
    }
    : report._tag === "Progress"
    ? {
      execution_id: executionId,
      id,
      kind: "progress",
      node_id: report.nodeId,
      level: null,
      fraction: report.fraction,
      message: report.message,
      message_length: 0,
      at: report.at
    }
    : {
      execution_id: executionId,
      id,
      kind: "log",
      node_id: report.nodeId,
      level: report.level,
      fraction: null,
      message: report.message,
      message_length: report.message.length,
      at: report.at
    }

/**
 * A row read back: a report, or (`kind` null) the log's drops, which the reads select in the same
 * statement as the reports so that both are of one moment (`id` is `dropped_through`, `at` is
 * `dropped`).
 */
interface ReadRow {
  readonly id: number
  readonly kind: string | null
  readonly node_id: string | null
  readonly level: string | null
  readonly fraction: number | null
  readonly message: string | null
  readonly at: number
}

const isLevel = Schema.is(LogLevel)
const isPreviewType = Schema.is(Schema.Literal("image/jpeg", "image/png"))

const undecodable = (operation: string, row: ReadRow) =>
  Either.left(
    new Errors.StorageError({ operation: `${operation}: decode row`, cause: `report ${row.id} of kind '${row.kind}'` })
  )

/** The report a row holds; a row no append wrote is a `StorageError` of `operation`. */
const fromRow = (operation: string, row: ReadRow): Either.Either<StoredReport, Errors.StorageError> => {
  if (row.kind === "progress" && row.node_id !== null && row.node_id.startsWith(PREVIEW_NODE)) {
    if (row.level !== null && isPreviewType(row.level) && row.message !== null) {
      return Either.right({
        id: Number(row.id),
        report: {
          _tag: "Preview",
          at: Number(row.at),
          nodeId: row.node_id.slice(PREVIEW_NODE.length),
          mediaType: row.level,
          url: row.message
        }
      })
    }
    return undecodable(operation, row)
  }
  if (row.kind === "progress" && row.node_id !== null && row.fraction !== null) {
    return Either.right({
      id: Number(row.id),
      report: {
        _tag: "Progress",
        at: Number(row.at),
        nodeId: row.node_id,
        fraction: row.fraction,
        message: row.message
      }
    })
  }
  if (row.kind === "log" && row.level !== null && isLevel(row.level) && row.message !== null) {
    return Either.right({
      id: Number(row.id),
      report: { _tag: "Log", at: Number(row.at), nodeId: row.node_id, level: row.level, message: row.message }
    })
  }
  return undecodable(operation, row)
}

/** The reports among `rows`, by id, and the log's drops (0 and 0 when nothing was dropped). */
const split = (operation: string, rows: ReadonlyArray<ReadRow>) =>
  Effect.gen(function*() {
    const reports: Array<StoredReport> = []
    let droppedThrough = 0
    let dropped = 0
    for (const row of rows) {
      if (row.kind === null) {
        droppedThrough = Number(row.id)
        dropped = Number(row.at)
      } else {
        reports.push(yield* fromRow(operation, row))
      }
    }
    return { reports, droppedThrough, dropped }
  })

/** The dialect-neutral part of the reports, over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const { builder: db } = runner
  // `kind` as the drops row has it (null), so both parts of the union have one shape.
  const reportColumns = (eb: ExpressionBuilder<Tables, "execution_reports">) =>
    ["id", eb.ref("kind").$castTo<string | null>().as("kind"), "node_id", "level", "fraction", "message", "at"] as const

  /** The log's drops as a row of the reads' shape (see `ReadRow`). */
  const drops = (executionId: string) =>
    db
      .selectFrom("execution_logs")
      .select([
        "dropped_through as id",
        sql<string | null>`null`.as("kind"),
        sql<string | null>`null`.as("node_id"),
        sql<string | null>`null`.as("level"),
        sql<number | null>`null`.as("fraction"),
        sql<string | null>`null`.as("message"),
        "dropped as at"
      ])
      .where("execution_id", "=", executionId)

  const after = PreparedQuery.make((p: PreparedQuery.Param<{ executionId: string; afterId: number }>) =>
    db
      .selectFrom("execution_reports")
      .select(reportColumns)
      .where("execution_id", "=", p("executionId"))
      .where("id", ">", p("afterId"))
      .unionAll(drops(p("executionId")))
      .orderBy("id")
  )
  const logs = PreparedQuery.make((p: PreparedQuery.Param<{ executionId: string }>) =>
    db
      .selectFrom("execution_reports")
      .select(reportColumns)
      .where("execution_id", "=", p("executionId"))
      .where("kind", "=", LOG)
      .unionAll(drops(p("executionId")))
      .orderBy("id")
  )

  /** Adds the appended lines to the log's counts. */
  const count = PreparedQuery.make((p: PreparedQuery.Param<{ executionId: string; lines: number; bytes: number }>) =>
    db
      .insertInto("execution_logs")
      .values({ execution_id: p("executionId"), lines: p("lines"), bytes: p("bytes"), dropped: 0, dropped_through: 0 })
      .onConflict((oc) =>
        oc.column("execution_id").doUpdateSet((eb) => ({
          lines: eb("execution_logs.lines", "+", eb.ref("excluded.lines")),
          bytes: eb("execution_logs.bytes", "+", eb.ref("excluded.bytes"))
        }))
      )
  )
  const OVER_BOUND = sql<boolean>`(lines > ${sql.lit(ExecutionReports.LOG_LINES)} or bytes > ${
    sql.lit(ExecutionReports.LOG_BYTES)
  })`
  /**
   * When the counts pass a bound: moves `dropped_through` to the newest line that must go, the
   * newest line before which more than `LOG_LINES` lines, or more than `LOG_BYTES`, are kept
   * (counting it).
   */
  const markDrops = PreparedQuery.make((p: PreparedQuery.Param<{ executionId: string }>) => {
    const ranked = db
      .selectFrom("execution_reports")
      .select([
        "id",
        sql<number>`row_number() over (order by id desc)`.as("newer_lines"),
        sql<number>`sum(message_length) over (order by id desc)`.as("newer_bytes")
      ])
      .where("execution_id", "=", p("executionId"))
      .where("kind", "=", LOG)
      .as("ranked")
    const newestDropped = db
      .selectFrom(ranked)
      .select((eb) => eb.fn.max("id").as("id"))
      .where((eb) =>
        eb.or([
          eb("newer_lines", ">", sql.lit(ExecutionReports.LOG_LINES)),
          eb("newer_bytes", ">", sql.lit(ExecutionReports.LOG_BYTES))
        ])
      )
    return db
      .updateTable("execution_logs")
      .set((eb) => ({ dropped_through: eb.fn.coalesce(newestDropped, eb.ref("dropped_through")) }))
      .where("execution_id", "=", p("executionId"))
      .where(OVER_BOUND)
  })
  /** Then counts the lines up to `dropped_through` as dropped, and no longer as kept. */
  const countDrops = PreparedQuery.make((p: PreparedQuery.Param<{ executionId: string }>) =>
    db
      .updateTable("execution_logs")
      .set((eb) => {
        const doomed = eb
          .selectFrom("execution_reports")
          .where("execution_reports.execution_id", "=", p("executionId"))
          .where("execution_reports.kind", "=", LOG)
          .whereRef("execution_reports.id", "<=", "execution_logs.dropped_through")
        const lines = doomed.select((eb) => eb.fn.countAll<number>().as("n"))
        const bytes = doomed.select((eb) => eb.fn.coalesce(eb.fn.sum<number>("message_length"), sql.lit(0)).as("n"))
        return {
          dropped: eb("dropped", "+", lines),
          lines: eb("lines", "-", lines),
          bytes: eb("bytes", "-", bytes)
        }
      })
      .where("execution_id", "=", p("executionId"))
      .where(OVER_BOUND)
  )
  /** And deletes them: a range of the key that holds, besides them, at most the older progress. */
  const deleteDropped = PreparedQuery.make((p: PreparedQuery.Param<{ executionId: string }>) =>
    db
      .deleteFrom("execution_reports")
      .where("execution_id", "=", p("executionId"))
      .where("kind", "=", LOG)
      .where("id", "<=", (eb) =>
        eb.selectFrom("execution_logs").select("dropped_through").where("execution_id", "=", p("executionId")))
  )

  /** Deletes the execution's preview (whatever its node), before a newer one is inserted. */
  const deletePreview = PreparedQuery.make((p: PreparedQuery.Param<{ executionId: string }>) =>
    db
      .deleteFrom("execution_reports")
      .where("execution_id", "=", p("executionId"))
      .where("kind", "=", PROGRESS)
      .where("node_id", "like", sql.lit(`${PREVIEW_NODE}%`))
  )

  /** The INSERTs of `rows`, a chunk at a time; `progress` ones replace the node's earlier progress. */
  const inserts = (
    rows: ReadonlyArray<Insertable<ExecutionReportsTable>>,
    progress: boolean
  ): Array<Compilable<unknown>> => {
    const statements: Array<Compilable<unknown>> = []
    for (let start = 0; start < rows.length; start += CHUNK) {
      const insert = db.insertInto("execution_reports").values(rows.slice(start, start + CHUNK))
      statements.push(
        progress
          ? insert.onConflict((oc) =>
            oc
              .columns(["execution_id", "node_id"])
              .where("kind", "=", PROGRESS)
              .doUpdateSet((eb) => ({
                id: eb.ref("excluded.id"),
                fraction: eb.ref("excluded.fraction"),
                message: eb.ref("excluded.message"),
                at: eb.ref("excluded.at")
              }))
          )
          : insert
      )
    }
    return statements
  }

  const service: Neutral = {
    // Called a few times a second per running execution: untraced.
    append: (executionId, reports) => {
      // One row per node, the last reported (one INSERT may not touch a row twice).
      const progress = new Map<string, Insertable<ExecutionReportsTable>>()
      const lines: Array<Insertable<ExecutionReportsTable>> = []
      // Only the newest preview is kept.
      let preview: Insertable<ExecutionReportsTable> | undefined
      for (const stored of reports) {
        const row = toRow(executionId, stored)
        if (stored.report._tag === "Progress") progress.set(stored.report.nodeId, row)
        else if (stored.report._tag === "Preview") preview = row
        else lines.push(row)
      }
      const statements = inserts([...progress.values()], true)
      if (preview !== undefined) statements.push(deletePreview.bind({ executionId }), ...inserts([preview], false))
      if (lines.length > 0) {
        const bytes = lines.reduce((sum, line) => sum + line.message_length, 0)
        statements.push(
          ...inserts(lines, false),
          count.bind({ executionId, lines: lines.length, bytes }),
          markDrops.bind({ executionId }),
          countDrops.bind({ executionId }),
          deleteDropped.bind({ executionId })
        )
      }
      return statements.length === 0
        ? Effect.void
        : Effect.asVoid(runner.transaction("append execution reports", statements))
    },
    after: (executionId, afterId) =>
      Effect.flatMap(
        runner.all("execution reports after", after.bind({ executionId, afterId })),
        (rows) =>
          Effect.map(
            split("execution reports after", rows),
            ({ droppedThrough, reports }) => ({ reports, droppedThrough })
          )
      ),
    logs: Effect.fn("SqlExecutionReports.logs")((executionId) =>
      Effect.flatMap(
        runner.all("execution logs", logs.bind({ executionId })),
        (rows) => Effect.map(split("execution logs", rows), ({ dropped, reports }) => ({ lines: reports, dropped }))
      )
    )
  }
  return service
})

/**
 * Layer of the reports for a storage only one process uses (SQLite): `announce` does nothing and
 * `announced` never emits, since the process's own streams hear of its reports in memory.
 */
export const layer = Layer.effect(
  ExecutionReports.ExecutionReports,
  Effect.map(make, (neutral) => ({
    ...neutral,
    announce: () => Effect.void,
    announced: Stream.never
  }))
)
