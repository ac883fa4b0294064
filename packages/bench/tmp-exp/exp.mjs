process.on("SIGTERM", () => { console.error("n", globalThis.__n, "async", globalThis.__async); process.exit(0) })
import { Instance } from "@appexec/server"
import { AppexecHttp, LocalRateLimitStore, NodeListener } from "@appexec/http"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { createServer } from "node:http"
const [dataDir, key, exId, mode] = process.argv.slice(2)
const { Appexec } = await import("@appexec/core")
const Database = (await import("better-sqlite3")).default
const program = Effect.gen(function*() {
  const app = yield* AppexecHttp.make({ rateLimit: { limit: 1e9 }, logRequests: process.env.NOLOG ? false : true }).pipe(Effect.provide(LocalRateLimitStore.layer()))
  if (mode === "loop") {
    const appexec = yield* Appexec.Appexec
    const mkResp = (body) => ({ status: 200, headers: { "content-type": "application/json", etag: '"3313c70decc18"', "ratelimit-limit": "1000000000", "ratelimit-remaining": "999999999", "ratelimit-reset": "30", "x-request-id": crypto.randomUUID() }, body })
    const lv = { view: (r) => Effect.flatMap(appexec.keys.authenticate(r.headers), (p) => Effect.map(appexec.executions.getJson(p, exId), (json) => mkResp(`{"data":${json}}`))) }
    const H = lv[process.env.CONST] ?? app.handle
    const req = { method: "GET", url: `/v1/executions/${exId}`, headers: { "x-api-key": key, host: "x" }, remoteAddress: "127.0.0.1", body: () => Effect.die("no") }
    for (let round = 0; round < 8; round++) {
      const n = 20000
      const t0 = process.cpuUsage()
      for (let i = 0; i < n; i++) {
        const r = yield* H(req)
        if (r.status !== 200) throw new Error(String(r.status))
      }
      const d = process.cpuUsage(t0)
      console.log(`loop: ${((d.user + d.system) / n).toFixed(1)} us/req`)
    }
    return
  }
  const server = mode === "plain" ? createServer() : NodeListener.createServer()
  const fullBody = '{"data":{"executionId":"8565dc89-1536-4e09-907b-6d8d9a48529b","workflowId":"74634ba1-53b0-885c-bfd2-26a4c6e8563c","status":"completed","outputs":[{"id":"greeting","label":"Greeting","type":"text","value":"Hello x, in a warm tone.","status":"completed","error":null}],"errorMessage":null,"startedAt":"2026-11-23T21:22:01.513Z","completedAt":"2026-11-23T21:22:01.608Z","createdAt":"2026-11-23T21:22:01.507Z"}}'
  const appexec = yield* Appexec.Appexec
  const mkResp = (body) => ({ status: 200, headers: { "content-type": "application/json", etag: '"3313c70decc18"', "ratelimit-limit": "1000000000", "ratelimit-remaining": "999999999", "ratelimit-reset": "30", "x-request-id": crypto.randomUUID() }, body })
  const C = process.env.CONST
  const db = new Database(dataDir + "/appexec.db")
  const b1 = db.prepare("BEGIN"), c1 = db.prepare("COMMIT"); const s1 = db.prepare('select "revision" from "key_revision" where "id" = ?'), s2 = db.prepare('select * from "executions" where "execution_id" = ?')
  const variants = {
    sqltx: (r) => Effect.sync(() => { b1.run(); s1.get(1); s2.get(exId); c1.run(); return mkResp(fullBody) }),
    sqlone: (r) => Effect.sync(() => { s1.get(1); return mkResp(fullBody) }),
    view: (r) => Effect.flatMap(appexec.keys.authenticate(r.headers), (p) => Effect.map(appexec.executions.getJson(p, exId), (json) => mkResp(`{"data":${json}}`))),
    rev: (r) => Effect.map(appexec.keys.authenticate(r.headers), () => { s2.get(exId); return mkResp(fullBody) }),
    sqlraw: (r) => Effect.sync(() => { s1.get(1); s2.get(exId); return mkResp(fullBody) }),
    effectonly: (r) => Effect.flatMap(Effect.sync(() => s1.get(1)), () => Effect.map(Effect.sync(() => s2.get(exId)), () => mkResp(fullBody))),
    auth: (r) => Effect.map(appexec.keys.authenticate(r.headers), () => mkResp(fullBody)),
    get: (r) => Effect.flatMap(appexec.keys.authenticate(r.headers), (p) => Effect.map(appexec.executions.get(p, exId), () => mkResp(fullBody))),
    getjson: (r) => Effect.flatMap(appexec.keys.authenticate(r.headers), (p) => Effect.map(appexec.executions.get(p, exId), (data) => mkResp(JSON.stringify({ data })))),
  }
  const constApp = variants[C] ? { runtime: app.runtime, handle: variants[C] } : { runtime: app.runtime, handle: process.env.CONST === "full" ? () => Effect.sync(() => ({ status: 200, headers: { "content-type": "application/json", etag: '"3313c70decc18"', "ratelimit-limit": "1000000000", "ratelimit-remaining": "999999999", "ratelimit-reset": "30", "x-request-id": crypto.randomUUID() }, body: fullBody })) : () => Effect.succeed({ status: 200, headers: { "content-type": "application/json" }, body: "{\"data\":{}}" }) }
  const inner = NodeListener.fromApp(process.env.CONST ? constApp : app)
  let spent = 0, count = 0, handleSpent = 0
  const h = app.handle
  const timedApp = { runtime: app.runtime, handle: (r) => { return h(r) } }
  server.on("request", (req, res) => { const t = performance.now(); inner(req, res); spent += performance.now() - t; count++ })
  setInterval(() => { if (count > 0) console.error(`listener ${(1000 * spent / count).toFixed(1)} us, answer ${(1000 * globalThis.__ans / count).toFixed(1)} us handle ${(1000 * globalThis.__h / count).toFixed(1)} us over ${count}`); globalThis.__ans = 0; globalThis.__h = 0; spent = 0; count = 0 }, 2000).unref()
  yield* Effect.async((resume) => server.listen(0, "127.0.0.1", () => resume(Effect.void)))
  console.log(`port ${server.address().port}`)
  return yield* Effect.never
}).pipe(Effect.scoped, Effect.provide(Instance.layer({ dataDir, background: true })))
Effect.runPromise(program.pipe(Effect.provide(Logger.minimumLogLevel(process.env.NOLOG ? LogLevel.None : LogLevel.Info)))).catch((e) => { console.error(e); process.exit(1) })
