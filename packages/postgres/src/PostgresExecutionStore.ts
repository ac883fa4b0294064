/**
 * `ExecutionStore` on PostgreSQL: the dialect-neutral reads of `@appexec/sql`
 * (`SqlExecutionStore`) and PostgreSQL's writes. A save is an `UPDATE` fenced by the lease token; a terminal
 * save clears the lease and inserts the webhook outbox entry, when there is one, in the same
 * statement (`WITH saved AS (UPDATE … RETURNING …) INSERT … SELECT … FROM saved`), so a finished
 * execution never lacks its webhook and a lost lease writes neither. Saves and inserts are
 * grouped: those that come while one statement of their kind is under way go together in the
 * next (`Batcher`), as prepared statements over arrays (`unnest`), each row fenced on its own;
 * an insert notifies idle workers in every process in its own statement. A cancel of a queued
 * execution is the same statement fenced by "still queued, no live lease". An idempotent start
 * is one statement too: it takes its key with `INSERT … ON CONFLICT DO UPDATE` (a held key kept
 * as it is) and inserts the execution only if it took the key: a second start with the key waits
 * for the first to commit, then finds it.
 */
import { ExecutionId } from "@appexec/api/Ids"
import {
  Batcher,
  Errors,
  type ExecutionQueue,
  type ExecutionRecord,
  ExecutionStore,
  type WebhookOutbox
} from "@appexec/core"
import { SqlExecutionStore } from "@appexec/sql"
import { toColumns } from "@appexec/sql/ExecutionRows"
import type { Tables } from "@appexec/sql/SqlTables"
import { Effect, Layer } from "effect"
import { CompiledQuery, type Kysely, sql, type UpdateQueryBuilder, type UpdateResult } from "kysely"
import { arrayLiteral, type Element } from "./internal/ArrayLiterals.js"
import { arrayParameters, columnArrays, columnNames, insertColumns } from "./internal/ExecutionColumns.js"
import { WorkNotifier } from "./internal/WorkNotifier.js"
import { PostgresClient, workChannel } from "./PostgresClient.js"

type ExecutionUpdate = UpdateQueryBuilder<Tables, "executions", "executions", UpdateResult>

/**
 * `update`, and the insert of `outbox` (when given) in the same statement if it changed a row;
 * the statement counts one row when it did.
 */
const updateWithOutbox = (db: Kysely<Tables>, update: ExecutionUpdate, outbox?: WebhookOutbox.OutboxEntry) => {
  if (outbox === undefined) return update.compile()
  return db
    .with("saved", () => update.returning("execution_id"))
    .insertInto("webhook_outbox")
    .columns([
      "delivery_id",
      "execution_id",
      "user_id",
      "url",
      "status",
      "next_attempt_at",
      "attempts",
      "created_at",
      "trace_parent",
      "event"
    ])
    .expression((eb) =>
      eb
        .selectFrom("saved")
        .select([
          eb.val(outbox.deliveryId).as("delivery_id"),
          "saved.execution_id",
          eb.val(outbox.userId).as("user_id"),
          eb.val(outbox.url).as("url"),
          eb.val(outbox.status).as("status"),
          sql<number>`${outbox.nextAttemptAt}::bigint`.as("next_attempt_at"),
          sql<string>`${JSON.stringify(outbox.attempts)}::jsonb`.as("attempts"),
          sql<number>`${outbox.createdAt}::bigint`.as("created_at"),
          sql<string | null>`${outbox.traceParent ?? null}::text`.as("trace_parent"),
          sql<string | null>`${outbox.event ?? null}::text`.as("event")
        ])
    )
    .compile()
}

/**
 * Whether a batch failed because of its rows rather than the database: a value refused (SQLSTATE
 * class 22, data exception, or 23, integrity constraint violation), or a deadlock or
 * serialization failure (40P01, 40001) — a batch locks many rows, a lease renewal of the same
 * worker may lock them in another order, and a row written alone cannot deadlock with it.
 */
export const refusedRow = (error: Errors.StorageError) => {
  const cause: unknown = error.cause
  return typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" &&
    /^(2[23]|40P01$|40001$)/.test(cause.code)
}

/** Most saves the batcher puts in one statement (`saveAll`'s statement takes any number). */
const SAVE_BATCH = 64

/** A save waiting for its batch. */
interface PendingSave {
  readonly record: ExecutionRecord.ExecutionRecord
  readonly lease: ExecutionQueue.Lease
  /** The webhook entry of a terminal save, when it has one. */
  readonly outbox: WebhookOutbox.OutboxEntry | undefined
}

/**
 * The statement of a batch of saves, a call of `appexec_save_executions` (migration 0020: each
 * row found through the index of `execution_id`, whatever the table's size): its text is the same
 * for every batch (one array per column), so it is prepared once per connection. It sets only what
 * a transition changes (as SQLite's save does): the other columns keep the values of the insert,
 * and a save sends none of them. A terminal save (`completed`, `failed`) also clears the lease.
 */
const saveStatement = (saves: ReadonlyArray<PendingSave>) => {
  /** One array parameter of `type` (`text`, `bigint`, …) with a value for each save. */
  const of = (type: string, value: (save: PendingSave) => Element) =>
    sql`${arrayLiteral(saves, value)}::${sql.raw(type)}[]`
  return sql<{ execution_id: string }>`
    SELECT s.execution_id FROM appexec_save_executions(
      ${of("text", (s) => s.record.executionId)}, ${of("bigint", (s) => s.lease.token)},
      ${of("text", (s) => s.lease.workerId)}, ${of("text", (s) => s.record.status)},
      ${of("text", (s) => JSON.stringify(s.record.outputs))}, ${of("text", (s) => s.record.errorMessage)},
      ${of("bigint", (s) => s.record.startedAt)}, ${of("bigint", (s) => s.record.completedAt)},
      ${of("text", (s) => s.outbox?.deliveryId ?? null)}, ${of("text", (s) => s.outbox?.userId ?? null)},
      ${of("text", (s) => s.outbox?.url ?? null)}, ${of("text", (s) => s.outbox?.status ?? null)},
      ${of("bigint", (s) => s.outbox?.nextAttemptAt ?? null)},
      ${of("text", (s) => s.outbox === undefined ? null : JSON.stringify(s.outbox.attempts))},
      ${of("bigint", (s) => s.outbox?.createdAt ?? null)},
      ${of("text", (s) => s.outbox?.traceParent ?? null)},
      ${of("text", (s) => s.outbox?.event ?? null)}
    ) AS s(execution_id)`
}

/**
 * The statement of a batch of inserts, which notifies the work channel (the last parameter)
 * once: its text is the same for every batch (one array per column), so it is written once.
 */
const insertText = `
    WITH inserted AS (
      INSERT INTO executions (${columnNames})
      SELECT * FROM unnest(${arrayParameters(1)})
      RETURNING seq
    )
    SELECT pg_notify($${insertColumns.length + 1}, '') WHERE EXISTS (SELECT 1 FROM inserted)`

/** The parameters of `insertText` for `records`: a column's values each, then the channel. */
const insertParameters = (channel: string, records: ReadonlyArray<ExecutionRecord.ExecutionRecord>) => [
  ...columnArrays(records),
  channel
]

/**
 * A start with an idempotency key, in one statement: takes the key unless it is held unexpired
 * (`ON CONFLICT DO UPDATE` that keeps a held key as it is and answers it), and inserts the
 * execution only when it took the key. A concurrent start with the key waits on the key's row
 * until the first commits, then finds the key held (or takes it, when the first rolled back).
 */
const idempotentInsertStatement = (
  record: ExecutionRecord.ExecutionRecord,
  key: ExecutionStore.IdempotencyKey,
  now: number
) => {
  const c = toColumns(record)
  const expired = sql`idempotency_keys.expires_at <= ${now}::bigint`
  return sql<{ execution_id: string; fingerprint: string }>`
    WITH taken AS (
      INSERT INTO idempotency_keys (workspace_id, key, fingerprint, execution_id, expires_at)
      VALUES (${key.workspaceId}, ${key.key}, ${key.fingerprint}, ${record.executionId}, ${key.expiresAt}::bigint)
      ON CONFLICT (workspace_id, key) DO UPDATE SET
        fingerprint = CASE WHEN ${expired} THEN excluded.fingerprint ELSE idempotency_keys.fingerprint END,
        execution_id = CASE WHEN ${expired} THEN excluded.execution_id ELSE idempotency_keys.execution_id END,
        expires_at = CASE WHEN ${expired} THEN excluded.expires_at ELSE idempotency_keys.expires_at END
      RETURNING execution_id, fingerprint
    ), inserted AS (
      INSERT INTO executions (
        execution_id, workflow_id, app_id, workspace_id, user_id, status, inputs, outputs, error_message,
        webhook_url, created_at, started_at, completed_at, trace_parent, webhook_events, priority, queue_at
      )
      SELECT ${c.execution_id}::text, ${c.workflow_id}::text, ${c.app_id}::text, ${c.workspace_id}::text,
        ${c.user_id}::text, ${c.status}::text, ${c.inputs}::text, ${c.outputs}::text, ${c.error_message}::text,
        ${c.webhook_url}::text, ${c.created_at}::bigint, ${c.started_at}::bigint, ${c.completed_at}::bigint,
        ${c.trace_parent}::text, ${c.webhook_events}::text, ${c.priority}::integer, ${c.queue_at}::bigint
      FROM taken WHERE taken.execution_id = ${record.executionId}::text
      RETURNING seq
    )
    SELECT execution_id, fingerprint FROM taken`
}

/** The store over the instance's pool; inserts wake idle workers in every process (`WorkNotifier`). */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const notifier = yield* WorkNotifier
  const neutral = yield* SqlExecutionStore.make
  const channel = workChannel(client.schema)

  /**
   * Saves under leases, grouped (`Batcher`): the saves that come while one statement is under way
   * go together in the next, one `UPDATE … FROM unnest(…)` fenced row by row by its lease, whose
   * terminal rows insert their webhook outbox entries in the same statement. The rows it changed
   * are the saves that held their lease.
   */
  const saveBatch = (saves: ReadonlyArray<PendingSave>) =>
    client.prepared("save execution", saveStatement(saves).compile(client.db)).pipe(
      Effect.map(({ rows }) => {
        const saved = new Set(rows.map((row) => row.execution_id))
        return saves.map((save) => saved.has(save.record.executionId))
      })
    )
  /**
   * Inserts, grouped (`Batcher`): one `INSERT … SELECT FROM unnest(…)` for the inserts that came
   * while the previous one was under way, which notifies the work channel in the same statement.
   * One insert statement at a time per process keeps the notifying commits (serialised by
   * PostgreSQL) few, and an insert alone (light traffic) wakes the workers at its commit.
   */
  const submitInsert = yield* Batcher.make({
    maxSize: 256,
    key: (record: ExecutionRecord.ExecutionRecord) => record.executionId,
    isolate: refusedRow,
    write: (records: ReadonlyArray<ExecutionRecord.ExecutionRecord>) =>
      client.prepared("insert execution", CompiledQuery.raw(insertText, insertParameters(channel, records))).pipe(
        Effect.as(records.map(() => undefined))
      )
  })
  const submitSave = yield* Batcher.make({
    maxSize: SAVE_BATCH,
    key: (save: PendingSave) => save.record.executionId,
    isolate: refusedRow,
    write: saveBatch
  })

  /** A save as its batch takes it: only a terminal save records its webhook delivery. */
  const pendingOf = ({ lease, outbox, record }: ExecutionStore.Save): PendingSave => ({
    record,
    lease,
    outbox: record.status === "completed" || record.status === "failed" ? outbox : undefined
  })

  const save = (
    record: ExecutionRecord.ExecutionRecord,
    lease: ExecutionQueue.Lease,
    outbox?: WebhookOutbox.OutboxEntry
  ) =>
    Effect.flatMap(
      submitSave(pendingOf({ record, lease, outbox })),
      (held) => (held ? Effect.void : new Errors.LeaseLost({ executionId: record.executionId }))
    )

  // Many saves as one statement (its arrays take any number): one wait for them all. A value the
  // database refuses fails the statement; the saves then go one by one, as the batcher isolates
  // them, so that the refused one fails alone.
  const alone = (pending: PendingSave) =>
    submitSave(pending).pipe(Effect.catchAll((error) => Effect.succeed<boolean | Errors.StorageError>(error)))
  const saveAll = ExecutionStore.makeSaveAll(save, (saves) => {
    const pending = saves.map(pendingOf)
    return saveBatch(pending).pipe(
      Effect.catchIf((error) => pending.length > 1 && refusedRow(error), () => Effect.forEach(pending, alone))
    )
  })

  const service: ExecutionStore.ExecutionStore["Type"] = {
    ...neutral,
    // The two writes of every execution go without a span of their own (as SQLite's), on the hot
    // path: a span per call costs a stack capture and a span object per execution.
    insert: submitInsert,
    insertIdempotent: Effect.fn("PostgresExecutionStore.insertIdempotent")((record, key, now) =>
      client.prepared(
        "insert execution with idempotency key",
        idempotentInsertStatement(record, key, now).compile(client.db)
      )
        .pipe(
          Effect.flatMap(({ rows: [row] }): Effect.Effect<ExecutionStore.IdempotentInsert, Errors.StorageError> =>
            row === undefined
              ? new Errors.StorageError({ operation: "insert execution with idempotency key", cause: "no key row" })
              : row.execution_id === record.executionId
              ? Effect.succeed({ _tag: "Inserted" })
              : Effect.succeed({
                _tag: "Existing",
                executionId: ExecutionId.make(row.execution_id),
                fingerprint: row.fingerprint
              })
          ),
          Effect.tap((result) => (result._tag === "Inserted" ? notifier.notify : Effect.void))
        )
    ),
    save,
    saveAll,
    cancelQueued: Effect.fn("PostgresExecutionStore.cancelQueued")((record, now, outbox) => {
      const { execution_id, ...columns } = toColumns(record)
      const db = client.db
      return client.prepared(
        "cancel queued execution",
        updateWithOutbox(
          db,
          db
            .updateTable("executions")
            .set({ ...columns, lease_worker: null, lease_token: null, lease_expires_at: null })
            .where("execution_id", "=", execution_id)
            .where("status", "=", sql.lit("queued"))
            .where((w) => w.or([w("lease_expires_at", "is", null), w("lease_expires_at", "<=", now)])),
          outbox
        )
      ).pipe(
        Effect.map(({ rowCount }) => rowCount > 0),
        // The webhook is due now; this process may deliver none (an API process): wake a dispatcher.
        Effect.tap((canceled) => (canceled && outbox !== undefined ? notifier.notifyWebhooks : Effect.void))
      )
    })
  }
  return service
})

/** Layer of the store; needs the pool and the notifier (see `PostgresStorage`). */
export const layer = Layer.scoped(ExecutionStore.ExecutionStore, make)
