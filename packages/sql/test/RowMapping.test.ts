import { ExecutionRows, PreparedQuery, RowMapping } from "@appexec/sql"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { db } from "./support/CompileOnly.js"

const row = {
  seq: 1,
  execution_id: "exe_1",
  workflow_id: "wf_1",
  app_id: "app_1",
  workspace_id: "ws_1",
  user_id: "usr_1",
  status: "queued",
  inputs: "{\"text\":\"hi\"}",
  outputs: "[]",
  error_message: null,
  webhook_url: null,
  created_at: 1,
  started_at: null,
  completed_at: null,
  lease_worker: null,
  lease_token: null,
  lease_expires_at: null,
  attempts: 0,
  claims: 0,
  cancel_requested_at: null,
  trace_parent: null,
  webhook_events: null,
  priority: 0,
  queue_at: 0
}

describe("row mapping", () => {
  it("maps an execution row back to the record it was written from", () => {
    const record = Either.getOrThrow(ExecutionRows.fromRow(row))
    expect(record.inputs).toEqual({ text: "hi" })
    expect(ExecutionRows.toColumns(record)).toMatchObject({
      inputs: row.inputs,
      outputs: row.outputs,
      status: "queued"
    })
  })

  it("refuses a status the domain does not know, and a JSON column that does not parse", () => {
    const strange = ExecutionRows.fromRow({ ...row, status: "paused" })
    expect(Either.isLeft(strange) && strange.left._tag).toBe("StorageError")
    const broken = ExecutionRows.fromRow({ ...row, inputs: "{" })
    expect(Either.isLeft(broken) && broken.left._tag).toBe("StorageError")
  })

  it("keeps a start's webhook events, and refuses an event the domain does not know", () => {
    const record = Either.getOrThrow(ExecutionRows.fromRow({ ...row, webhook_events: "start,logs,completed" }))
    expect(record.webhookEvents).toEqual(["start", "logs", "completed"])
    expect(ExecutionRows.toColumns(record).webhook_events).toBe("start,logs,completed")
    expect(Either.getOrThrow(ExecutionRows.fromRow(row)).webhookEvents).toBeUndefined()
    const strange = ExecutionRows.fromRow({ ...row, webhook_events: "start,progress" })
    expect(Either.isLeft(strange) && strange.left._tag).toBe("StorageError")
  })

  it("reads a flag as SQLite (0/1) and PostgreSQL (boolean) store it", () => {
    const app = {
      app_id: "app_1",
      name: "A",
      description: null,
      workspace_id: null,
      workflow_id: "wf_1",
      created_at: 1,
      updated_at: 2
    }
    expect(RowMapping.appOfRow({ ...app, is_public: 1 }).isPublic).toBe(true)
    expect(RowMapping.appOfRow({ ...app, is_public: true }).isPublic).toBe(true)
    expect(RowMapping.appOfRow({ ...app, is_public: 0 }).isPublic).toBe(false)
  })
})

describe("PreparedQuery", () => {
  it("compiles once and binds each call's values in place of the placeholders", () => {
    let builds = 0
    const query = PreparedQuery.make((p: PreparedQuery.Param<{ hash: string }>) => {
      builds += 1
      return db.selectFrom("api_keys").select("hint").where("hash", "=", p("hash")).where("revoked_at", "is", null)
    })
    const a = query.bind({ hash: "a" })
    const b = query.bind({ hash: "b" })
    expect(builds).toBe(1)
    expect(a.compile().sql).toBe(b.compile().sql)
    expect(a.compile().parameters).toEqual(["a"])
    expect(b.compile().parameters).toEqual(["b"])
    expect(PreparedQuery.isPrepared(a)).toBe(true)
    expect(PreparedQuery.isPrepared(db.selectFrom("api_keys").select("hint"))).toBe(false)
  })
})
