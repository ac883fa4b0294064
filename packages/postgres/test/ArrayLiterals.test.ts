/**
 * The array parameters of the batched saves and inserts are written as node-postgres writes
 * arrays, byte for byte (PostgreSQL reads the same text), and PostgreSQL reads them back as the
 * values they were.
 */
import { Ids } from "@appexec/api"
import type { ExecutionRecord } from "@appexec/core"
import { PostgresClient } from "@appexec/postgres"
import { toColumns } from "@appexec/sql/ExecutionRows"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { sql } from "kysely"
import pg from "pg"
import { arrayLiteral, type Element } from "../src/internal/ArrayLiterals.js"
import { columnArrays, insertColumns } from "../src/internal/ExecutionColumns.js"
import * as TestDatabase from "./support/TestDatabase.js"

const database = TestDatabase.create("arrays")
const clientLayer = Layer.unwrapEffect(
  Effect.map(
    Effect.promise(() => database),
    (connectionString) => PostgresClient.layer({ connectionString, schema: "arrays", poolSize: 1 })
  )
)

/** node-postgres's own writing of a parameter. */
const prepared = (value: unknown): unknown =>
  (pg as unknown as { utils: { prepareValue: (value: unknown) => unknown } }).utils.prepareValue(value)

const texts: ReadonlyArray<string | null> = [
  "plain",
  "",
  "a \"quoted\" word",
  "back\\slash and \\\" both",
  "{\"json\":[1,\"two\",null],\"s\":\"x\\\\y\"}",
  "comma, brace } and NULL",
  "\"quotes at both ends\"",
  "\\",
  "\"\"\\\\",
  "NULL",
  "ünïcödé ✓",
  null
]
const numbers: ReadonlyArray<Element> = [0, -12, 1733177000123, 3.5, 12345678901234567890n, true, undefined]

describe("ArrayLiterals", () => {
  it("writes an array as node-postgres does", () => {
    expect(arrayLiteral(texts, (v) => v)).toBe(prepared(texts))
    expect(arrayLiteral(numbers, (v) => v)).toBe(prepared(numbers))
    expect(arrayLiteral([], (v) => v)).toBe(prepared([]))
    expect(arrayLiteral([{ id: "x" }, { id: "y\"" }], (o) => o.id)).toBe(prepared(["x", "y\""]))
  })

  it("writes an insert's column arrays as node-postgres writes each column's values", () => {
    const record = (n: number, extra: Partial<ExecutionRecord.ExecutionRecord>): ExecutionRecord.ExecutionRecord => ({
      executionId: Ids.ExecutionId.make(`00000000-0000-4000-8000-00000000000${n}`),
      workflowId: Ids.WorkflowId.make("00000000-0000-4000-8400-000000000001"),
      appId: Ids.AppId.make("00000000-0000-4000-8300-000000000001"),
      workspaceId: Ids.WorkspaceId.make("00000000-0000-4000-8100-000000000001"),
      userId: Ids.UserId.make("00000000-0000-4000-8200-000000000001"),
      status: "queued",
      inputs: { prompt: `a "quoted" \\ prompt, {braced}`, "ünï": "NULL, null" },
      outputs: [],
      errorMessage: null,
      webhookUrl: null,
      createdAt: 1733177000123 + n,
      startedAt: null,
      completedAt: null,
      ...extra
    })
    const records = [
      record(1, {}),
      record(2, { webhookUrl: "https://example.com/h?a=1&b=\"2\"", priority: 5, webhookEvents: ["completed"] }),
      record(3, { traceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" })
    ]
    const rows = records.map(toColumns)
    expect(columnArrays(records)).toEqual(insertColumns.map(([column]) => prepared(rows.map((row) => row[column]))))
  })

  it.scoped("PostgreSQL reads back the values written", () =>
    Effect.gen(function*() {
      const client = yield* PostgresClient.PostgresClient
      const read = yield* client.execute("read", (db) =>
        sql<{ texts: Array<string | null>; numbers: Array<string> }>`
          SELECT ${arrayLiteral(texts, (v) => v)}::text[] AS texts,
            ${arrayLiteral([0, -12, 1733177000123], (v) => v)}::bigint[]::text[] AS numbers`.execute(db))
      expect(read.rows).toEqual([{ texts, numbers: ["0", "-12", "1733177000123"] }])
    }).pipe(Effect.provide(clientLayer)))
})
