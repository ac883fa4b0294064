import { Logger, HashMap, LogLevel, Cause, List, FiberId, FiberRefs } from "effect"
const line = { requestId: crypto.randomUUID(), method: "GET", path: "/v1/executions/ff50957c-8541-4cd7-b13e-d4815f97fe54", route: "/v1/executions/:executionId", status: 200, ms: 3 }
const fiberId = FiberId.make(12, Date.now())
const ctx = FiberRefs.empty()
let out = 0
const lg = process.env.FMT === "logfmt" ? Logger.logfmtLogger : Logger.jsonLogger
for (let round = 0; round < 4; round++) {
  const n = 50000
  let t = performance.now()
  for (let i = 0; i < n; i++) {
    const annotations = HashMap.make(["requestId", line.requestId], ["method", line.method], ["route", line.route], ["status", line.status], ["ms", line.ms])
    const s = lg.log({ fiberId, logLevel: LogLevel.Info, message: `${line.method} ${line.path} ${line.status} ${line.ms}ms`, cause: Cause.empty, context: ctx, spans: List.empty(), annotations, date: new Date() })
    out += s.length
  }
  const a = (performance.now() - t) * 1000 / n
  t = performance.now()
  for (let i = 0; i < n; i++) {
    const annotations = HashMap.make(["requestId", line.requestId], ["method", line.method], ["route", line.route], ["status", line.status], ["ms", line.ms])
    out += HashMap.size(annotations)
  }
  const b = (performance.now() - t) * 1000 / n
  t = performance.now()
  for (let i = 0; i < n; i++) {
    const s = JSON.stringify({ message: `${line.method} ${line.path} ${line.status} ${line.ms}ms`, logLevel: "INFO", timestamp: new Date().toISOString(), annotations: { requestId: line.requestId, method: line.method, route: line.route, status: line.status, ms: line.ms }, spans: {}, fiberId: "#12" })
    out += s.length
  }
  const c = (performance.now() - t) * 1000 / n
  console.log(`jsonLogger ${a.toFixed(2)} us, HashMap.make ${b.toFixed(2)} us, direct ${c.toFixed(2)} us`)
}
console.log(lg.log({ fiberId, logLevel: LogLevel.Info, message: "x", cause: Cause.empty, context: ctx, spans: List.empty(), annotations: HashMap.make(["a", 1]), date: new Date() }))
