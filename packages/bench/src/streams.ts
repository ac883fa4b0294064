/**
 * Event streams against polls (docs/performance.md, issue 46 item 3): `appexec serve` on SQLite
 * runs one execution that reports progress about every 300 ms (two `util.delay` of 45 s), with
 * no worker limit in the way. While it runs, 4 clients poll it back to back (`GET
 * /v1/executions/{id}`, keep-alive) for `POLL_MS`, first with no stream open, then with `STREAMS`
 * streams (`GET …/events`) open on it, each reading every event. Figures: the polls' latency
 * (p50, p99, max) both ways, the server's RSS (VmRSS) both ways, and the CPU time of the
 * server's main thread over 5 s with no poll, both ways: the difference, per change of the
 * execution, is what the streams cost at each change (a figure that depends less on how busy the
 * machine is than the latencies), and the changes the streams received say they kept up.
 *
 * `BENCH_APPEXEC_BIN` runs another build of `appexec` (to compare before and after a change).
 */
import { Effect, Option } from "effect"
import { readFileSync } from "node:fs"
import { Agent } from "node:http"
import { join } from "node:path"
import { type Benchmark, type Figure, reportLoad } from "./Benchmark.js"
import * as EventStreamReader from "./EventStreamReader.js"
import * as Percentile from "./Percentile.js"
import * as ProcessCpu from "./ProcessCpu.js"
import * as AppexecCommand from "./servers/appexec.js"
import * as TempDir from "./TempDir.js"

/** Streams open on the execution. */
const STREAMS = 2_000
/** Streams being opened at once. */
const OPENING = 200
/** Clients polling at once, each back to back. */
const POLLERS = 4
/** How long the polls of each phase run. */
const POLL_MS = 10_000
/** How long the server's own CPU time is measured, with no request, in each phase. */
const IDLE_MS = 5_000

/** input → wait 45 s → wait 45 s → output: about 90 s of progress, a report every 300 ms or so. */
const progressing = {
  name: "Progressing",
  description: "Waits 90 seconds, reporting its progress",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "first", type: "util.delay", label: "First half", config: { ms: 45_000 } },
    { id: "second", type: "util.delay", label: "Second half", config: { ms: 45_000 } },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [
    { source: "prompt", target: "first" },
    { source: "first", target: "second" },
    { source: "second", target: "out" }
  ]
}

/** The resident set of process `pid` (KiB), from `/proc/<pid>/status`. */
const rssKiB = (pid: number) =>
  Effect.sync(() => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN))

/**
 * `POLLERS` clients polling `executionId` back to back for `POLL_MS`: every poll's time (ms,
 * sorted), and the status the last one read.
 */
const pollFor = (server: AppexecCommand.Serve, executionId: string) =>
  Effect.map(
    Effect.forEach(Array.from({ length: POLLERS }, (_, i) => i), () =>
      Effect.promise(async () => {
        const times: Array<number> = []
        let status = "none"
        const until = Date.now() + POLL_MS
        while (Date.now() < until) {
          const began = performance.now()
          const response = await fetch(`${server.baseUrl}/v1/executions/${executionId}`, {
            headers: { "x-api-key": server.key }
          })
          const body = (await response.json()) as { readonly data?: { readonly status: string } }
          times.push(performance.now() - began)
          if (!response.ok) throw new Error(`poll: ${response.status}`)
          status = body.data?.status ?? "none"
        }
        return { times, status }
      }), { concurrency: "unbounded" }),
    (all) => ({
      times: all.flatMap((p) => p.times).sort((a, b) => a - b),
      status: all[0]?.status ?? "none"
    })
  )

/**
 * `STREAMS` streams on `executionId`, each resolved at its first event and left open, counting
 * every event; a stream refused (a busy server answers 408 to a request it did not read in time),
 * or without a first event within 60 s, is counted as failed.
 */
const openStreams = (server: AppexecCommand.Serve, executionId: string, agent: Agent, counted: { events: number }) =>
  Effect.forEach(Array.from({ length: STREAMS }, (_, i) => i), () =>
    Effect.gen(function*() {
      let first: () => void = () => undefined
      const received = new Promise<void>((resolve) => {
        first = resolve
      })
      const stream = yield* EventStreamReader.open(`${server.baseUrl}/v1/executions/${executionId}/events`, {
        headers: { "x-api-key": server.key },
        agent,
        onEvent: () => {
          counted.events += 1
          first()
        }
      })
      yield* Effect.promise(() => received).pipe(
        Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => new Error("a stream had no first event") }),
        Effect.tapError(() => Effect.sync(stream.close))
      )
      return stream
    }).pipe(Effect.option), { concurrency: OPENING }).pipe(
      Effect.map((opened) => ({
        streams: opened.flatMap((o) => (Option.isSome(o) ? [o.value] : [])),
        failed: opened.filter(Option.isNone).length
      }))
    )

/** The benchmark. */
export const benchmark: Benchmark = {
  name: "streams",
  run: (report) =>
    Effect.scoped(Effect.gen(function*() {
      yield* reportLoad(report, "streams", "start")
      const dir = yield* TempDir.make("streams")
      const server = yield* AppexecCommand.serve([
        "--data",
        join(dir, "data"),
        "--apps",
        AppexecCommand.writeApps(dir, [progressing]),
        "--max-streams-per-key",
        String(STREAMS * 2),
        "--max-connections",
        String(STREAMS * 3),
        "--max-connections-per-ip",
        String(STREAMS * 3),
        "--rate-limit",
        "100000000"
      ])
      const pid = server.child.pid!
      const apps = yield* AppexecCommand.call<ReadonlyArray<{ appId: string; name: string }>>(server, "/v1/apps")
      const app = apps.find((a) => a.name === progressing.name)!
      const { executionId } = yield* AppexecCommand.call<{ executionId: string }>(
        server,
        `/v1/apps/${app.appId}/executions`,
        {
          inputs: { prompt: "go" }
        }
      )

      const ms = (name: string, value: number): Figure => ({ name, value, unit: "ms" })
      const times = (name: string, sorted: ReadonlyArray<number>) =>
        Effect.all([
          report(ms(`${name}_p50`, Percentile.of(sorted, 50))),
          report(ms(`${name}_p99`, Percentile.of(sorted, 99))),
          report(ms(`${name}_max`, sorted.at(-1) ?? Number.NaN))
        ])

      /** The server's main-thread CPU time over `IDLE_MS` with no request: what it spends on its own. */
      const idleCpu = Effect.gen(function*() {
        const before = ProcessCpu.ofMainThread(pid)
        yield* Effect.sleep(IDLE_MS)
        return (ProcessCpu.ofMainThread(pid) - before) / 1000
      })

      const aloneCpu = yield* idleCpu
      const alone = yield* pollFor(server, executionId)
      if (alone.status !== "running") return yield* Effect.fail(new Error(`the execution was ${alone.status}`))
      yield* times("streams.poll.no_streams", alone.times)
      yield* report({ name: "streams.rss.no_streams", value: (yield* rssKiB(pid)) / 1024, unit: "MiB" })

      const agent = new Agent({ keepAlive: false, maxSockets: Infinity })
      yield* Effect.addFinalizer(() => Effect.sync(() => agent.destroy()))
      const counted = { events: 0 }
      const opening = Date.now()
      const { failed, streams } = yield* openStreams(server, executionId, agent, counted)
      yield* Effect.addFinalizer(() => Effect.sync(() => streams.forEach((stream) => stream.close())))
      yield* report({ name: "streams.open.seconds", value: (Date.now() - opening) / 1000, unit: "s" })
      yield* report({ name: "streams.open.failed", value: failed, unit: "streams" })

      // Each stream gets one event per change of the execution (a progress report).
      const idleFrom = counted.events
      const streamsCpu = yield* idleCpu
      const changes = (counted.events - idleFrom) / Math.max(1, streams.length)
      const busy = yield* pollFor(server, executionId)
      if (busy.status !== "running") return yield* Effect.fail(new Error(`the execution was ${busy.status}`))
      yield* times(`streams.poll.${STREAMS}_streams`, busy.times)
      yield* report({ name: `streams.rss.${STREAMS}_streams`, value: (yield* rssKiB(pid)) / 1024, unit: "MiB" })
      yield* report({ name: "streams.changes_per_second", value: changes / (IDLE_MS / 1000), unit: "changes/s" })
      yield* report({ name: "streams.server_cpu.no_streams", value: aloneCpu / (IDLE_MS / 1000), unit: "ms/s" })
      yield* report({
        name: `streams.server_cpu.${STREAMS}_streams`,
        value: streamsCpu / (IDLE_MS / 1000),
        unit: "ms/s"
      })
      yield* report({
        name: `streams.server_cpu.per_change_of_${STREAMS}_streams`,
        value: (streamsCpu - aloneCpu) / Math.max(1, changes),
        unit: "ms"
      })
      yield* reportLoad(report, "streams", "end")
      yield* report(ms(`streams.goal.poll.${STREAMS}_streams_p99, under`, 100))
    }))
}
