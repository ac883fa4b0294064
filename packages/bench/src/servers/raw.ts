/**
 * Benchmark server (c), the machine's limit: `node:http` and better-sqlite3 with nothing else,
 * doing what `GET /v1/executions/{id}` does — API key from `x-api-key`, looked up by SHA-256
 * hash, then the execution of that workspace by id — and answering the same JSON.
 * Reads `BENCH_KEY`, `BENCH_EXECUTION_ID` and `BENCH_BODY`; prints its port on stdout.
 */
import Database from "better-sqlite3"
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

const key = process.env.BENCH_KEY!
const executionId = process.env.BENCH_EXECUTION_ID!
const db = new Database(":memory:")
db.exec(`
  create table api_keys (hash text primary key, workspace_id text not null, revoked_at integer);
  create table executions (execution_id text primary key, workspace_id text not null, body text not null);
`)
db.prepare("insert into api_keys values (?, 'w1', null)").run(createHash("sha256").update(key).digest("hex"))
db.prepare("insert into executions values (?, 'w1', ?)").run(executionId, process.env.BENCH_BODY!)
const findKey = db.prepare<[string], { workspace_id: string; revoked_at: number | null }>(
  "select workspace_id, revoked_at from api_keys where hash = ?"
)
const findExecution = db.prepare<[string, string], { body: string }>(
  "select body from executions where execution_id = ? and workspace_id = ?"
)

const server = createServer((req, res) => {
  const presented = req.headers["x-api-key"]
  const found = typeof presented === "string"
    ? findKey.get(createHash("sha256").update(presented).digest("hex"))
    : undefined
  if (found === undefined || found.revoked_at !== null) {
    res.writeHead(401, { "content-type": "application/json" })
    return void res.end("{\"error\":{\"code\":\"unauthorized\",\"message\":\"The API key is not valid.\"}}")
  }
  const id = req.url?.startsWith("/v1/executions/") === true ? req.url.slice("/v1/executions/".length) : ""
  const row = findExecution.get(id, found.workspace_id)
  if (row === undefined) {
    res.writeHead(404, { "content-type": "application/json" })
    return void res.end("{\"error\":{\"code\":\"not_found\",\"message\":\"not found\"}}")
  }
  res.writeHead(200, { "content-type": "application/json" })
  res.end(row.body)
})
server.listen(0, "127.0.0.1", () => console.log(`port ${(server.address() as AddressInfo).port}`))
process.once("SIGTERM", () => server.close(() => process.exit(0)))
