/**
 * Live executions benchmark (docs/api.md#live-executions, issue 28 item 8):
 *
 * 1. Report → event latency at an SSE client: an app of built-in nodes, input → [`util.delay`
 *    300 ms → `http.request` to an origin in this process that answers after 300 ms] × 15 →
 *    output, so every log line of `http.request` comes at least 250 ms (`reportInterval`) after
 *    the execution's previous write and is written at once. 10 executions at once, each followed
 *    by one stream (`node:http`); latency = when this process receives the `log` event minus its
 *    `at` (the time the node logged it, same machine clock). (a) Same process: `appexec serve` on
 *    SQLite (API and worker in one process; its worker runs 4 executions at a time, the default,
 *    which `serve` has no flag for). (b) Across processes: `serve --no-worker` and one
 *    `appexec worker --concurrency 10` on the embedded PostgreSQL, which wakes the API's
 *    streams by NOTIFY; split at the NOTIFY as a listener in this process hears it (the worker's
 *    write and announcement before, the API's wake-up, reads and SSE write after).
 * 2. Memory per open idle stream: `appexec serve --no-worker` on SQLite (the execution stays
 *    queued, its streams idle after their first event), 10,000 streams to one execution; the
 *    server's RSS (VmRSS) before and once all are open (after 2 s to settle). Before is measured
 *    after 100 streams were opened and closed, so that the code of the path is loaded. Also: the
 *    rate the streams opened at, and, once all are closed at once, how long until a poll is
 *    answered (the server takes the closes in turn).
 * 3. Store writes for dense progress: in this process, an instance on a SQLite file whose node
 *    reports progress every 100 ms for 10 minutes of virtual time (`TestClock`), counting the
 *    `ExecutionReports.append` calls.
 */
import { PostgresClient } from "@appexec/postgres"
import { Effect, Logger, LogLevel, Option, Schedule } from "effect"
import { readFileSync } from "node:fs"
import { Agent, createServer } from "node:http"
import { join } from "node:path"
import pg from "pg"
import { type Benchmark, type Figure, reportLoad } from "./Benchmark.js"
import * as EventStreamReader from "./EventStreamReader.js"
import { denseWrites } from "./liveWrites.js"
import * as Percentile from "./Percentile.js"
import * as AppexecCommand from "./servers/appexec.js"
import * as PostgresServer from "./servers/postgres.js"
import * as TempDir from "./TempDir.js"

/** Pairs of delay and request in the chain. */
const STEPS = 15
/** How long each delay waits, and the origin takes to answer. */
const STEP_MS = 300
/** Executions run at once for the latency. */
const EXECUTIONS = 10
/** Streams held open for the memory figure. */
const STREAMS = 10_000
/** Streams being opened at once. */
const OPENING = 200

/** input → [util.delay → http.request to `origin`] × STEPS → output.text. */
const chain = (origin: string) => {
  const steps = Array.from({ length: STEPS }, (_, i) => i + 1)
  return {
    name: "Chain",
    description: `Waits ${STEP_MS} ms and calls a slow origin, ${STEPS} times`,
    public: true,
    nodes: [
      { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
      ...steps.flatMap((i) => [
        { id: `wait${i}`, type: "util.delay", label: `Wait ${i}`, config: { ms: STEP_MS } },
        { id: `call${i}`, type: "http.request", label: `Call ${i}`, config: { method: "GET", url: origin } }
      ]),
      { id: "out", type: "output.text", label: "Out" }
    ],
    edges: [
      ...steps.flatMap((i) => [
        { source: i === 1 ? "prompt" : `call${i - 1}`, target: `wait${i}` },
        { source: `wait${i}`, target: `call${i}` }
      ]),
      { source: `call${STEPS}`, target: "out" }
    ]
  }
}

/** An HTTP origin on 127.0.0.1 that answers every request after `STEP_MS`; its URL. Closed with the scope. */
const slowOrigin = Effect.acquireRelease(
  Effect.async<{ readonly url: string; readonly close: () => void }>((resume) => {
    const server = createServer((_, response) => {
      setTimeout(() => response.end("ok"), STEP_MS)
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      if (typeof address !== "object" || address === null) return resume(Effect.die(new Error("no port")))
      resume(Effect.succeed({ url: `http://127.0.0.1:${address.port}/slow`, close: () => server.close() }))
    })
  }),
  ({ close }) => Effect.sync(close)
)

/** Starts an execution of the app named `name`; its id. */
const start = (server: AppexecCommand.Serve, name: string) =>
  Effect.gen(function*() {
    const apps = yield* AppexecCommand.call<ReadonlyArray<{ appId: string; name: string }>>(server, "/v1/apps")
    const app = apps.find((a) => a.name === name)
    if (app === undefined) return yield* Effect.fail(new Error(`no app '${name}'`))
    const started = yield* AppexecCommand.call<{ executionId: string }>(server, `/v1/apps/${app.appId}/executions`, {
      inputs: { prompt: "go" }
    })
    return started.executionId
  })

const eventsUrl = (server: AppexecCommand.Serve, executionId: string) =>
  `${server.baseUrl}/v1/executions/${executionId}/events`

/** A `log` event as received: its execution, when the node logged it and when it arrived (epoch ms). */
interface Sample {
  readonly executionId: string
  readonly at: number
  readonly receivedAt: number
}

/** A log line as the stream's `log` event and the logs read both carry it. */
interface LogLine {
  readonly at: string
  readonly nodeId: string | null
  readonly message: string
}

const lineKey = (line: LogLine) => `${line.at} ${line.nodeId} ${line.message}`

/** What the streams of a run received, against the logs kept. */
interface Received {
  readonly samples: ReadonlyArray<Sample>
  /** Kept lines a stream did not send that were logged before its first event arrived (it joined late: by design). */
  readonly beforeJoin: number
  /** Kept lines a stream did not send that were logged after its first event arrived: none, if no line is lost. */
  readonly missed: number
}

/**
 * `EXECUTIONS` executions of the chain at once, each followed by one stream read to its end
 * (opened without `Last-Event-ID`: it sends the lines logged after it joined); every `log` event
 * received, and the kept lines (`GET …/logs`) the streams did not send. An execution that does
 * not complete fails.
 */
const logEvents = (server: AppexecCommand.Serve) =>
  Effect.map(
    Effect.forEach(Array.from({ length: EXECUTIONS }, (_, i) => i), () =>
      Effect.gen(function*() {
        const executionId = yield* start(server, "Chain")
        const samples: Array<Sample> = []
        const seen = new Set<string>()
        let joinedAt = Number.POSITIVE_INFINITY
        let status = "none"
        const stream = yield* EventStreamReader.open(eventsUrl(server, executionId), {
          headers: { "x-api-key": server.key },
          onEvent: (event) => {
            joinedAt = Math.min(joinedAt, event.receivedAt)
            // A `log` event's data is a line; an `execution` event's, the execution with its status.
            const data = JSON.parse(event.data) as LogLine & { readonly status: string }
            if (event.event === "log") {
              samples.push({ executionId, at: Date.parse(data.at), receivedAt: event.receivedAt })
              seen.add(lineKey(data))
            }
            if (event.event === "execution") status = data.status
          }
        })
        yield* Effect.promise(() => stream.ended)
        if (status !== "completed") return yield* Effect.fail(new Error(`execution ${executionId} ended ${status}`))
        const kept = yield* AppexecCommand.call<ReadonlyArray<LogLine>>(server, `/v1/executions/${executionId}/logs`)
        const unsent = kept.filter((line) => !seen.has(lineKey(line)))
        const beforeJoin = unsent.filter((line) => Date.parse(line.at) <= joinedAt).length
        return { samples, beforeJoin, missed: unsent.length - beforeJoin }
      }), { concurrency: "unbounded" }),
    (all): Received => ({
      samples: all.flatMap((r) => r.samples),
      beforeJoin: all.reduce((n, r) => n + r.beforeJoin, 0),
      missed: all.reduce((n, r) => n + r.missed, 0)
    })
  )

const sorted = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)

/** (a): `appexec serve` on SQLite, API and worker in one process. */
const sameProcess = Effect.scoped(Effect.gen(function*() {
  const origin = yield* slowOrigin
  const dir = yield* TempDir.make("live")
  const server = yield* AppexecCommand.serve([
    "--data",
    join(dir, "data"),
    "--apps",
    AppexecCommand.writeApps(dir, [chain(origin.url)]),
    "--allow-private-networks"
  ])
  const received = yield* logEvents(server)
  return { received, latencies: sorted(received.samples.map((e) => e.receivedAt - e.at)) }
}))

/**
 * A listener of the live channel of the default schema, as an API process listens: when each
 * execution's announcements arrived (epoch ms, in order). Closed with the scope.
 */
const announcements = (url: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const heard = new Map<string, Array<number>>()
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      client.on("notification", (message) => {
        const at = Date.now()
        for (const id of (message.payload ?? "").split(",")) {
          const times = heard.get(id) ?? []
          times.push(at)
          heard.set(id, times)
        }
      })
      await client.query(`LISTEN "${PostgresClient.liveChannel("public")}"`)
      return { heard, client }
    }),
    ({ client }) => Effect.promise(() => client.end())
  )

/** (b): `serve --no-worker` and one `appexec worker`, each on its own data directory, on PostgreSQL. */
const acrossProcesses = Effect.scoped(Effect.gen(function*() {
  const origin = yield* slowOrigin
  const database = yield* PostgresServer.scoped
  const env = { APPEXEC_DATABASE_URL: database.url, ...AppexecCommand.masterKey() }
  const api = yield* TempDir.make("live-api")
  const server = yield* AppexecCommand.serve([
    "--data",
    api,
    "--apps",
    AppexecCommand.writeApps(api, [chain(origin.url)]),
    "--no-worker"
  ], env)
  // The schema exists (serve made it) before the worker opens the database.
  const worker = yield* TempDir.make("live-worker")
  yield* AppexecCommand.worker([
    "--data",
    worker,
    "--concurrency",
    String(EXECUTIONS),
    "--allow-private-networks"
  ], env)
  const { heard } = yield* announcements(database.url)
  const received = yield* logEvents(server)
  const samples = received.samples
  // The announcement of the write that carried a line: the first one heard for its execution after it was logged.
  const announced = samples.map((e) => heard.get(e.executionId)?.find((t) => t >= e.at) ?? Number.NaN)
  return {
    received,
    latencies: sorted(samples.map((e) => e.receivedAt - e.at)),
    toAnnouncement: sorted(samples.map((e, i) => announced[i]! - e.at)),
    fromAnnouncement: sorted(samples.map((e, i) => e.receivedAt - announced[i]!))
  }
}))

/** The resident set of process `pid` (KiB), from `/proc/<pid>/status`. */
const rssKiB = (pid: number) =>
  Effect.sync(() => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN))

/**
 * Opens `count` streams to one execution, each resolved at its first event and left open; a
 * stream refused, or without an event within 30 s, is counted as failed.
 */
const openStreams = (server: AppexecCommand.Serve, executionId: string, count: number, agent: Agent) =>
  Effect.map(
    Effect.forEach(Array.from({ length: count }, (_, i) => i), () =>
      Effect.gen(function*() {
        let first: () => void = () => undefined
        const received = new Promise<void>((resolve) => {
          first = resolve
        })
        const stream = yield* EventStreamReader.open(eventsUrl(server, executionId), {
          headers: { "x-api-key": server.key },
          agent,
          onEvent: () => first()
        })
        let open = true
        void stream.ended.then(() => {
          open = false
        })
        yield* Effect.promise(() => received).pipe(
          Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("no first event") }),
          Effect.tapError(() => Effect.sync(stream.close))
        )
        return { close: stream.close, isOpen: () => open }
      }).pipe(Effect.option), { concurrency: OPENING }),
    (opened) => ({
      streams: opened.flatMap((o) => Option.isSome(o) ? [o.value] : []),
      failed: opened.filter(Option.isNone).length
    })
  )

/** 2: RSS per open idle stream, with `STREAMS` open. */
const memoryPerStream = Effect.scoped(Effect.gen(function*() {
  const dir = yield* TempDir.make("live-memory")
  const server = yield* AppexecCommand.serve([
    "--data",
    join(dir, "data"),
    "--apps",
    AppexecCommand.writeApps(dir, [chain("http://127.0.0.1:9/never")]),
    "--no-worker",
    "--max-streams-per-key",
    "20000",
    "--max-connections",
    "30000",
    "--max-connections-per-ip",
    "30000",
    "--rate-limit",
    "1000000"
  ])
  const pid = server.child.pid!
  const executionId = yield* start(server, "Chain")
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity })
  const warmUp = yield* openStreams(server, executionId, 100, agent)
  for (const stream of warmUp.streams) stream.close()
  yield* Effect.sleep("2 seconds")
  const before = yield* rssKiB(pid)
  const opening = Date.now()
  const { failed, streams } = yield* openStreams(server, executionId, STREAMS, agent)
  const openedIn = Date.now() - opening
  yield* Effect.sleep("2 seconds")
  const after = yield* rssKiB(pid)
  const open = streams.filter((s) => s.isOpen()).length
  const closing = Date.now()
  for (const stream of streams) stream.close()
  // The server takes the closes in turn: a poll is answered once it is through them (a poll that
  // waits longer than the server's request timeout is answered 408 and sent again).
  const polled = yield* AppexecCommand.call<{ status: string }>(server, `/v1/executions/${executionId}`).pipe(
    Effect.retry(Schedule.spaced("200 millis")),
    Effect.timeoutFail({ duration: "2 minutes", onTimeout: () => new Error("no poll answered after the closes") })
  )
  const answeredIn = Date.now() - closing
  yield* Effect.sleep("2 seconds")
  const closed = yield* rssKiB(pid)
  agent.destroy()
  return { before, after, closed, open, failed, openedIn, answeredIn, polled: polled.status }
}))

const ms = (name: string, value: number): Figure => ({ name, value, unit: "ms" })

/** The benchmark. */
export const benchmark: Benchmark = {
  name: "live",
  run: (report) =>
    Effect.gen(function*() {
      const times = (name: string, values: ReadonlyArray<number>) =>
        Effect.all([
          report(ms(`${name}_p50`, Percentile.of(values, 50))),
          report(ms(`${name}_p99`, Percentile.of(values, 99))),
          report(ms(`${name}_max`, values.at(-1) ?? Number.NaN))
        ])
      // How busy the machine was: every latency below moves with it.
      const load = (when: string) => reportLoad(report, "live", when)
      yield* load("start")
      const counts = (name: string, received: Received) =>
        Effect.all([
          report({ name: `${name}.samples`, value: received.samples.length, unit: "log events" }),
          report({ name: `${name}.lines_logged_before_join`, value: received.beforeJoin, unit: "lines" }),
          report({ name: `${name}.lines_missed`, value: received.missed, unit: "lines" })
        ])
      const same = yield* sameProcess
      yield* times("live.same_process.latency", same.latencies)
      yield* counts("live.same_process", same.received)
      const across = yield* acrossProcesses
      yield* times("live.across_processes.latency", across.latencies)
      yield* counts("live.across_processes", across.received)
      // Where it goes: up to the announcement (the worker's write and NOTIFY, heard by a listener in
      // this process), and from it to the event (the API's wake-up, its reads, the SSE write).
      yield* times("live.across_processes.report_to_notify", across.toAnnouncement)
      yield* times("live.across_processes.notify_to_event", across.fromAnnouncement)

      const memory = yield* memoryPerStream
      yield* report({ name: "live.memory.streams_open", value: memory.open, unit: "streams" })
      yield* report({ name: "live.memory.opening_rate", value: (STREAMS / memory.openedIn) * 1000, unit: "streams/s" })
      if (memory.failed > 0) {
        yield* report({ name: "live.memory.streams_failed", value: memory.failed, unit: "streams" })
      }
      yield* report({ name: "live.memory.rss_before", value: memory.before / 1024, unit: "MiB" })
      yield* report({ name: "live.memory.rss_open", value: memory.after / 1024, unit: "MiB" })
      yield* report({ name: "live.memory.rss_closed", value: memory.closed / 1024, unit: "MiB" })
      yield* report({ name: "live.memory.per_stream", value: (memory.after - memory.before) / STREAMS, unit: "KiB" })
      yield* report(ms("live.memory.poll_answered_after_closing", memory.answeredIn))
      if (memory.polled !== "queued") {
        return yield* Effect.fail(new Error(`the poll after the streams: ${memory.polled}`))
      }

      yield* load("end")

      const writes = yield* denseWrites
      const seconds = writes.ms / 1000
      yield* report({ name: "live.store_writes.virtual_execution_seconds", value: seconds, unit: "s" })
      yield* report({
        name: "live.store_writes.per_execution_second",
        value: writes.writes / seconds,
        unit: "writes/s"
      })
      yield* report({ name: "live.store_writes.total_10_minutes", value: writes.writes, unit: "writes" })

      yield* report(ms("live.goal.same_process.latency_p99, under", 50))
      yield* report(ms("live.goal.across_processes.latency_p99, under", 100))
      yield* report({ name: "live.goal.memory_per_stream, under", value: 20, unit: "KiB" })
      yield* report({ name: "live.goal.store_writes.per_execution_second, at most", value: 4, unit: "writes/s" })
      yield* report({ name: "live.goal.store_writes.total_10_minutes, at most", value: 2_400, unit: "writes" })
    }).pipe(Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)))
}
