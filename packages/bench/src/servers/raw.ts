/**
 * Benchmark server (b), the machine's floor: `node:http` and better-sqlite3 with nothing else,
 * doing what appexec does for each measured request — the API key from `x-api-key` looked up by
 * SHA-256 hash, then:
 *
 * - `GET /v1/executions/{id}`: the execution of that workspace by id;
 * - `GET /v1/apps`: the workspace's and the public apps, in name order;
 * - `GET /v1/apps/{id}`: the app by id, if public or the workspace's;
 * - `POST /v1/apps/{id}/executions`: the JSON body read and parsed, `inputs` checked to be an
 *   object, the app read, a queued execution inserted, and 202 with its id.
 *
 * Rows hold the JSON appexec answered with, so the answers are the same bytes. The database is a
 * file in WAL mode with `synchronous = NORMAL`, as appexec's. Reads `BENCH_KEY`,
 * `BENCH_EXECUTION_ID`, `BENCH_BODY`, `BENCH_APPS` (the list's `data` array), `BENCH_APP_ID`,
 * `BENCH_APP_BODY` and `BENCH_DB`; prints its port on stdout. With `BENCH_BATCHED=1` it writes
 * the answers of one event-loop turn together at its end (`setImmediate`), as appexec's Node
 * listener does: the floor of a server that uses the same technique.
 */
import Database from "better-sqlite3"
import { createHash, randomUUID } from "node:crypto"
import { createServer, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

const env = (name: string) => process.env[name] ?? ""
const db = new Database(env("BENCH_DB") || ":memory:")
db.pragma("journal_mode = WAL")
db.pragma("synchronous = NORMAL")
db.exec(`
  create table api_keys (hash text primary key, workspace_id text not null, revoked_at integer);
  create table executions (execution_id text primary key, workspace_id text not null, app_id text, inputs text, body text not null);
  create table apps (app_id text primary key, workspace_id text, is_public integer not null, name text not null, summary text not null, detail text not null);
`)
const hash = (key: string) => createHash("sha256").update(key).digest("hex")
db.prepare("insert into api_keys values (?, 'w1', null)").run(hash(env("BENCH_KEY")))
db.prepare("insert into executions values (?, 'w1', null, null, ?)").run(env("BENCH_EXECUTION_ID"), env("BENCH_BODY"))
const apps = JSON.parse(env("BENCH_APPS") || "[]") as Array<{ appId: string; name: string }>
const insertApp = db.prepare("insert into apps values (?, null, 1, ?, ?, ?)")
for (const app of apps) {
  insertApp.run(
    app.appId,
    app.name,
    JSON.stringify(app),
    app.appId === env("BENCH_APP_ID") ? env("BENCH_APP_BODY") : "{}"
  )
}
const findKey = db.prepare<[string], { workspace_id: string; revoked_at: number | null }>(
  "select workspace_id, revoked_at from api_keys where hash = ?"
)
const findExecution = db.prepare<[string, string], { body: string }>(
  "select body from executions where execution_id = ? and workspace_id = ?"
)
const listApps = db.prepare<[string], { summary: string }>(
  "select summary from apps where workspace_id = ? or is_public = 1 order by name, app_id"
)
const findApp = db.prepare<[string, string], { detail: string; app_id: string }>(
  "select detail, app_id from apps where app_id = ? and (is_public = 1 or workspace_id = ?)"
)
const insertExecution = db.prepare("insert into executions values (?, ?, ?, ?, ?)")

// With its length, as appexec answers: no chunked framing.
const answer = (res: ServerResponse, status: number, body: string) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}
let queued: Array<readonly [ServerResponse, number, string]> = []
const flush = () => {
  const batch = queued
  queued = []
  for (const [res, status, body] of batch) answer(res, status, body)
}
const send = process.env.BENCH_BATCHED === "1"
  ? (res: ServerResponse, status: number, body: string) => {
    if (queued.length === 0) setImmediate(flush)
    queued.push([res, status, body])
  }
  : answer
const notFound = "{\"error\":{\"code\":\"not_found\",\"message\":\"not found\"}}"

const server = createServer((req, res) => {
  const presented = req.headers["x-api-key"]
  const found = typeof presented === "string" ? findKey.get(hash(presented)) : undefined
  if (found === undefined || found.revoked_at !== null) {
    return send(res, 401, "{\"error\":{\"code\":\"unauthorized\",\"message\":\"The API key is not valid.\"}}")
  }
  const url = req.url ?? "/"
  if (url.startsWith("/v1/executions/")) {
    const row = findExecution.get(url.slice("/v1/executions/".length), found.workspace_id)
    return row === undefined ? send(res, 404, notFound) : send(res, 200, row.body)
  }
  if (url === "/v1/apps") {
    return send(res, 200, `{"data":[${listApps.all(found.workspace_id).map((r) => r.summary).join(",")}]}`)
  }
  const parts = url.split("/")
  if (parts[2] === "apps" && parts.length === 4 && req.method === "GET") {
    const row = findApp.get(parts[3]!, found.workspace_id)
    return row === undefined ? send(res, 404, notFound) : send(res, 200, row.detail)
  }
  if (parts[2] === "apps" && parts[4] === "executions" && req.method === "POST") {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      let body: unknown
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      } catch {
        return send(res, 400, "{\"error\":{\"code\":\"invalid_request\",\"message\":\"not JSON\"}}")
      }
      const inputs = typeof body === "object" && body !== null ? (body as { inputs?: unknown }).inputs : undefined
      if (typeof inputs !== "object" || inputs === null) {
        return send(res, 400, "{\"error\":{\"code\":\"invalid_request\",\"message\":\"no inputs\"}}")
      }
      const app = findApp.get(parts[3]!, found.workspace_id)
      if (app === undefined) return send(res, 404, notFound)
      const executionId = randomUUID()
      const started = JSON.stringify({
        data: { executionId, workflowId: app.app_id, status: "queued", webhookUrl: null, outputs: [] }
      })
      insertExecution.run(executionId, found.workspace_id, app.app_id, JSON.stringify(inputs), started)
      send(res, 202, started)
    })
    return
  }
  send(res, 404, notFound)
})
server.listen(0, "127.0.0.1", () => console.log(`port ${(server.address() as AddressInfo).port}`))
process.once("SIGTERM", () => server.close(() => process.exit(0)))
