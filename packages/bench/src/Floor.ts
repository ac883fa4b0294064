/**
 * The storage floor of the queue: the storage work one execution needs — insert it, claim it with
 * a lease, save it completed, a transaction each — written plainly against better-sqlite3 on a
 * file in WAL mode, with the columns, the JSON payloads and the claim index of appexec's
 * `executions` table, and its ids (time-ordered, as `IdGenerator.random` makes them). What the
 * engine reaches is measured against it.
 */
import { IdGenerator } from "@appexec/core"
import { SqliteClient } from "@appexec/sqlite"
import Database from "better-sqlite3"
import { randomUUID } from "node:crypto"

const schema = [
  `CREATE TABLE executions (
    seq INTEGER PRIMARY KEY,
    execution_id TEXT NOT NULL UNIQUE,
    workflow_id TEXT NOT NULL,
    app_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    status TEXT NOT NULL,
    inputs TEXT NOT NULL,
    outputs TEXT NOT NULL,
    error_message TEXT,
    webhook_url TEXT,
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    completed_at INTEGER,
    lease_worker TEXT,
    lease_token INTEGER,
    lease_expires_at INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    claims INTEGER NOT NULL DEFAULT 0
  ) STRICT`,
  `CREATE INDEX executions_open ON executions (workspace_id, seq, lease_expires_at) WHERE status IN ('queued', 'running')`
]

/**
 * Executions per second of the plain storage work for `count` executions, all inserted first, and
 * the CPU time of one (µs, user and system).
 */
export const floor = (
  filename: string,
  count: number,
  synchronous: "NORMAL" | "FULL" = "NORMAL"
): { readonly perSecond: number; readonly cpuPerExecution: number } => {
  const db = new Database(filename)
  try {
    db.pragma("journal_mode = WAL")
    db.pragma(`synchronous = ${synchronous}`)
    // The engine's page cache (`SqliteClient`), so that the two differ in their work alone.
    db.pragma(`cache_size = -${SqliteClient.PAGE_CACHE_KIB}`)
    for (const statement of schema) db.exec(statement)
    const insert = db.prepare(
      `INSERT INTO executions (execution_id, workflow_id, app_id, workspace_id, user_id, status, inputs, outputs,
         error_message, webhook_url, created_at, started_at, completed_at)
       VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, NULL, NULL, ?, NULL, NULL)`
    )
    const claim = db.prepare(
      `UPDATE executions SET claims = claims + 1, attempts = attempts + 1, lease_token = claims + 1,
         lease_worker = ?, lease_expires_at = ?
       WHERE seq = (SELECT seq FROM executions WHERE status IN ('queued', 'running')
         AND (lease_expires_at IS NULL OR lease_expires_at <= ?) ORDER BY workspace_id, seq LIMIT 1)
       RETURNING *`
    )
    const complete = db.prepare(
      `UPDATE executions SET status = 'completed', outputs = ?, started_at = ?, completed_at = ?,
         lease_worker = NULL, lease_token = NULL, lease_expires_at = NULL
       WHERE execution_id = ? AND lease_token = ? AND lease_worker = ?`
    )
    const begin = db.prepare("BEGIN IMMEDIATE")
    const commit = db.prepare("COMMIT")
    const inTransaction = <A>(f: () => A): A => {
      begin.run()
      const result = f()
      commit.run()
      return result
    }
    const ids = { workflow: randomUUID(), app: randomUUID(), workspace: randomUUID(), user: randomUUID() }
    const pending = JSON.stringify([{
      id: "out",
      label: "Out",
      type: "pending",
      value: null,
      status: "pending",
      error: null
    }])
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    for (let i = 0; i < count; i++) {
      inTransaction(() =>
        insert.run(
          IdGenerator.timeOrderedUuid(),
          ids.workflow,
          ids.app,
          ids.workspace,
          ids.user,
          JSON.stringify({ in: `${i}` }),
          pending,
          Date.now()
        )
      )
    }
    for (let i = 0; i < count; i++) {
      const now = Date.now()
      const row = inTransaction(() => claim.get("worker", now + 30_000, now)) as {
        execution_id: string
        lease_token: number
        inputs: string
      }
      JSON.parse(row.inputs)
      const outputs = JSON.stringify([{
        id: "out",
        label: "Out",
        type: "text",
        value: `${i}`,
        status: "completed",
        error: null
      }])
      inTransaction(() => complete.run(outputs, now, Date.now(), row.execution_id, row.lease_token, "worker"))
    }
    const elapsed = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    return { perSecond: (count / elapsed) * 1000, cpuPerExecution: (cpu.user + cpu.system) / count }
  } finally {
    db.close()
  }
}
