/**
 * HTTP benchmark: 50 connections for 10 s each (autocannon), one endpoint at a time, against
 * (a) `appexec serve` — auth, the rate limit on (set high), SQLite, logging at its default (one
 * logfmt line per request on stderr, a pipe the benchmark drains) — and (b) the machine's floor, `node:http` +
 * better-sqlite3 doing the same work (`servers/raw.ts`). Endpoints: `GET /v1/executions/{id}`
 * (what polling clients send), `GET /v1/apps`, `GET /v1/apps/{id}` and
 * `POST /v1/apps/{id}/executions` (last: the executions it queues are run by appexec's worker
 * meanwhile). For `GET /v1/executions/{id}` also (b'), the floor writing the answers of one
 * event-loop turn together as appexec's listener does, and (c), the framework floor: a bare
 * `HttpApi` endpoint of `@effect/platform` returning a constant body.
 *
 * Then the start path on PostgreSQL (`start_execution_postgres`): `POST /v1/apps/{id}/executions`
 * through two `appexec serve --no-worker` processes on one embedded PostgreSQL (every commit
 * flushed), 25 connections to each at once from a load generator in a process of its own
 * (`servers/load.ts`), after 5 s of the same load untimed (the warm-up);
 * their summed rate, the slower p99 of the two, and the CPU per start of both, printed beside the
 * SQLite figure and the goal (3,000/s, p99 < 50 ms); then the CPU per start of PostgreSQL and of
 * the load generator, which share the machine's cores with them.
 *
 * Figures: req/s, p50 and p99 latency of each, and the ratio a/b per endpoint (a/b' and a/c for polling).
 * `BENCH_HTTP_SECONDS` shortens the runs; `BENCH_HTTP_PROFILE=dir` runs the servers under
 * `node --cpu-prof` and leaves the profiles in `dir`; `BENCH_APPEXEC_BIN` runs another build of
 * the `appexec` command; `BENCH_HTTP_ENDPOINTS=get_execution,list_apps` measures only those.
 */
import autocannon from "autocannon"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type Benchmark, reportLoad } from "./Benchmark.js"
import * as ProcessCpu from "./ProcessCpu.js"
import { bin, masterKey } from "./servers/appexec.js"
import type * as LoadProcess from "./servers/load.js"
import * as PostgresServer from "./servers/postgres.js"
import * as TempDir from "./TempDir.js"

const root = fileURLToPath(new URL("../../../", import.meta.url))
const seconds = Number(process.env.BENCH_HTTP_SECONDS ?? 10)
const profileDir = process.env.BENCH_HTTP_PROFILE

/**
 * Starts `node [--cpu-prof] script args`; resolves with the process and the first match on stdout
 * (the printed key) or stderr (the log, with the start-up lines).
 */
const start = (script: string, args: ReadonlyArray<string>, pattern: RegExp, env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.async<{ child: ChildProcess; match: RegExpMatchArray }, Error>((resume) => {
      const profile = profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]
      const child = spawn(process.execPath, [...profile, script, ...args], {
        cwd: root,
        // The log format is the command's default (logfmt) unless the caller sets `APPEXEC_LOG_FORMAT`.
        env: { ...process.env, ...env },
        // Logs stay on (one line per request is part of the cost); the pipe is drained below.
        stdio: ["ignore", "pipe", "pipe"]
      })
      for (const stream of [child.stdout!, child.stderr!]) {
        let out = ""
        let found = false
        stream.on("data", (d) => {
          if (found) return
          out += String(d)
          const match = pattern.exec(out)
          if (match === null) return
          found = true
          out = ""
          resume(Effect.succeed({ child, match }))
        })
      }
      child.once("exit", (code) => resume(Effect.fail(new Error(`${script} exited with ${code}`))))
    }),
    ({ child }) =>
      Effect.async<void>((resume) => {
        if (child.exitCode !== null) return resume(Effect.void)
        child.once("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      })
  )

/** What one load sends: a target of the load generator's (`servers/load.ts`). */
type Load = LoadProcess.Target

/** One autocannon run (50 connections, `seconds` long, unless told). */
const load = ({ body, headers, method = "GET", url }: Load, connections = 50, duration = seconds) =>
  Effect.async<autocannon.Result, Error>((resume) => {
    autocannon(
      { url, method, connections, duration, headers, ...(body === undefined ? {} : { body }) },
      (error, result) => resume(error ? Effect.fail(error) : Effect.succeed(result))
    )
  })

/** `spec` run by a load generator in a process of its own (`servers/load.ts`): its answer. */
const loadInProcess = (spec: LoadProcess.Spec) =>
  Effect.async<LoadProcess.Answer, Error>((resume) => {
    const child = spawn(process.execPath, [join(root, "packages/bench/dist/servers/load.js"), JSON.stringify(spec)], {
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    child.stdout!.on("data", (d) => {
      out += String(d)
    })
    child.once("exit", (code) => {
      if (code !== 0) return resume(Effect.fail(new Error(`the load generator exited with ${code}`)))
      try {
        resume(Effect.succeed(JSON.parse(out) as LoadProcess.Answer))
      } catch (cause) {
        resume(Effect.fail(new Error(`the load generator answered ${out.slice(0, 200)}`, { cause })))
      }
    })
    return Effect.sync(() => child.kill())
  })

/** The goal of the start path on PostgreSQL: starts per second, at a p99 under `P99_GOAL_MS`. */
const STARTS_GOAL = 3_000
const P99_GOAL_MS = 50
/**
 * Seconds of the same load, untimed, before the start path is measured: two fresh processes
 * compile their hot code meanwhile (measured without it, the first seconds' p99 was 80–90 ms
 * where the processes, warm, answered at 30–40 ms).
 */
const STARTS_WARMUP_SECONDS = 5

/**
 * Starts through two `appexec serve --no-worker` processes on one PostgreSQL database, 25
 * connections to each at once (the executions stay queued: no worker runs), after a warm-up.
 */
const startsOnPostgres = (
  dataDir: string,
  startBody: string,
  report: Parameters<Benchmark["run"]>[0]
) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* PostgresServer.scoped
    const env = { APPEXEC_DATABASE_URL: server.url, ...masterKey() }
    const args = (
      dir: string
    ) => ["serve", "--port", "0", "--no-worker", "--data", join(dataDir, dir), "--rate-limit", "1000000000"]
    // The first process bootstraps the database (and prints the key); the second finds it ready.
    const first = yield* start(
      bin,
      args("pg-a"),
      /curl -H 'x-api-key: (aex_[A-Za-z0-9_-]+)' (http:\/\/[^\s]+)\/v1\/apps/,
      env
    )
    const second = yield* start(bin, args("pg-b"), /appexec is listening on (http:\/\/127\.0\.0\.1:\d+) /, env)
    const headers = { "x-api-key": first.match[1]!, "content-type": "application/json" }
    const urls = [first.match[2]!, second.match[1]!]
    const apps = yield* Effect.promise(() =>
      fetch(`${urls[0]}/v1/apps`, { headers }).then((r) =>
        r.json() as Promise<{ data: Array<{ appId: string; name: string }> }>
      )
    )
    const greeting = apps.data.find((a) => a.name === "Greeting")!
    const pids = [first.child.pid, second.child.pid]
    /** Transactions committed in the database so far (statistics flushed within a second of a commit). */
    const commits = Effect.promise(() =>
      PostgresServer.withClient(server.url, async (client) => {
        const { rows } = await client.query<{ n: string }>(
          "SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()"
        )
        return Number(rows[0]!.n)
      })
    )
    // The load comes from a process of its own (`servers/load.ts`), fresh for each run.
    const startAll = (duration: number) =>
      loadInProcess({
        targets: urls.map((url) => ({
          url: `${url}/v1/apps/${greeting.appId}/executions`,
          method: "POST",
          headers,
          body: startBody
        })),
        connections: 25,
        duration
      })
    yield* startAll(Math.min(STARTS_WARMUP_SECONDS, seconds))
    const commitsBefore = yield* commits
    // Every figure here moves with what else the machine runs: its load, before and after.
    yield* reportLoad(report, "http.start_execution.postgres_2_api", "start")
    const cpuBefore = pids.map(ProcessCpu.ofProcess)
    const serverBefore = yield* PostgresServer.backendsCpu(server.url)
    const { cpuMicros: loadCpu, results } = yield* startAll(seconds)
    const cpu = pids.reduce<number>((sum, pid, i) => sum + ProcessCpu.ofProcess(pid) - cpuBefore[i]!, 0)
    const serverCpu = PostgresServer.cpuUsed(serverBefore, yield* PostgresServer.backendsCpu(server.url))
    yield* reportLoad(report, "http.start_execution.postgres_2_api", "end")
    const non2xx = results.reduce((sum, r) => sum + r.non2xx, 0)
    if (non2xx > 0) return yield* Effect.fail(new Error(`start_execution_postgres: ${non2xx} non-2xx answers`))
    const errors = results.reduce((sum, r) => sum + r.errors, 0)
    if (errors > 0) {
      yield* report({ name: "http.start_execution.postgres_2_api.errors", value: errors, unit: "requests" })
    }
    const total = results.reduce((sum, r) => sum + r.requests.total, 0)
    yield* report({
      name: "http.start_execution.postgres_2_api.requests",
      value: results.reduce((sum, r) => sum + r.requests.average, 0),
      unit: `req/s (goal >= ${STARTS_GOAL})`
    })
    yield* report({
      name: "http.start_execution.postgres_2_api.p50",
      value: Math.max(...results.map((r) => r.latency.p50)),
      unit: "ms"
    })
    yield* report({
      name: "http.start_execution.postgres_2_api.p99",
      value: Math.max(...results.map((r) => r.latency.p99)),
      unit: `ms (the slower process; goal < ${P99_GOAL_MS})`
    })
    yield* Effect.sleep("1500 millis")
    yield* report({
      name: "http.start_execution.postgres_2_api.commits_per_request",
      value: ((yield* commits) - commitsBefore) / total,
      unit: "transactions"
    })
    if (cpu > 0) {
      yield* report({
        name: "http.start_execution.postgres_2_api.cpu_per_request",
        value: cpu / total,
        unit: "µs (both API processes)"
      })
    }
    // The rest of what a start costs the machine, whose cores all three share.
    yield* report({
      name: "http.start_execution.postgres_2_api.cpu_per_request.postgres",
      value: serverCpu / total,
      unit: "µs"
    })
    yield* report({
      name: "http.start_execution.postgres_2_api.cpu_per_request.load_generator",
      value: loadCpu / total,
      unit: "µs"
    })
  }))

/** The benchmark. */
export const benchmark: Benchmark = {
  name: "http",
  run: (report) =>
    Effect.gen(function*() {
      const dataDir = yield* TempDir.make("http")
      // (a) appexec serve on SQLite, with a rate limit no run reaches.
      const appexec = yield* start(
        bin,
        ["serve", "--port", "0", "--data", join(dataDir, "appexec"), "--rate-limit", "1000000000"],
        /curl -H 'x-api-key: (aex_[A-Za-z0-9_-]+)' (http:\/\/[^\s]+)\/v1\/apps/
      )
      const [, key, baseUrl] = appexec.match
      const headers = { "x-api-key": key! }
      const getText = (path: string) =>
        Effect.promise(() => fetch(`${baseUrl}${path}`, { headers }).then((r) => r.text()))
      const appsBody = yield* getText("/v1/apps")
      const apps = (JSON.parse(appsBody) as { data: Array<{ appId: string; name: string }> }).data
      const greeting = apps.find((a) => a.name === "Greeting")!
      const startBody = JSON.stringify({ inputs: { who: "bench" } })
      const postHeaders = { ...headers, "content-type": "application/json" }
      const started = yield* Effect.promise(() =>
        fetch(`${baseUrl}/v1/apps/${greeting.appId}/executions`, {
          method: "POST",
          headers: postHeaders,
          body: startBody
        }).then((r) => r.json() as Promise<{ data: { executionId: string } }>)
      )
      const executionId = started.data.executionId
      // Polled once it is done, as most polls find it.
      yield* Effect.sleep("500 millis")
      const executionBody = yield* getText(`/v1/executions/${executionId}`)
      const appBody = yield* getText(`/v1/apps/${greeting.appId}`)

      // (b) the machine's floor, answering the same bytes.
      const rawEnv = {
        BENCH_BODY: executionBody,
        BENCH_KEY: key!,
        BENCH_EXECUTION_ID: executionId,
        BENCH_APPS: JSON.stringify(apps),
        BENCH_APP_ID: greeting.appId,
        BENCH_APP_BODY: appBody
      }
      const raw = yield* start(join(root, "packages/bench/dist/servers/raw.js"), [], /port (\d+)/, {
        ...rawEnv,
        BENCH_DB: join(dataDir, "raw.db")
      })
      const rawUrl = `http://127.0.0.1:${raw.match[1]}`

      const measure = (name: string, target: Load, server: ChildProcess) =>
        Effect.gen(function*() {
          const cpuBefore = ProcessCpu.ofProcess(server.pid)
          const result = yield* load(target)
          const cpu = ProcessCpu.ofProcess(server.pid) - cpuBefore
          if (result.non2xx > 0) {
            return yield* Effect.fail(new Error(`${name}: ${result.non2xx} non-2xx answers`))
          }
          // Requests that got no answer in time (autocannon's 10 s) on an overloaded machine.
          if (result.errors > 0) yield* report({ name: `http.${name}.errors`, value: result.errors, unit: "requests" })
          yield* report({ name: `http.${name}.requests`, value: result.requests.average, unit: "req/s" })
          yield* report({ name: `http.${name}.p50`, value: result.latency.p50, unit: "ms" })
          yield* report({ name: `http.${name}.p99`, value: result.latency.p99, unit: "ms" })
          // The server's own CPU time per answer: what bounds its rate once a core is its alone.
          if (cpu > 0) {
            yield* report({ name: `http.${name}.cpu_per_request`, value: cpu / result.requests.total, unit: "µs" })
          }
          return result.requests.average
        })

      const endpoints: ReadonlyArray<readonly [string, Omit<Load, "url">, string]> = [
        ["get_execution", { headers }, `/v1/executions/${executionId}`],
        ["list_apps", { headers }, "/v1/apps"],
        ["get_app", { headers }, `/v1/apps/${greeting.appId}`],
        [
          "start_execution",
          { headers: postHeaders, method: "POST", body: startBody },
          `/v1/apps/${greeting.appId}/executions`
        ]
      ]
      const only = process.env.BENCH_HTTP_ENDPOINTS?.split(",")
      for (const [name, request, path] of endpoints) {
        if (only !== undefined && !only.includes(name)) continue
        const a = yield* measure(`${name}.appexec`, { ...request, url: `${baseUrl}${path}` }, appexec.child)
        const b = yield* measure(`${name}.raw_node_sqlite`, { ...request, url: `${rawUrl}${path}` }, raw.child)
        yield* report({ name: `http.${name}.ratio.appexec_over_raw`, value: a / b, unit: "x" })
        if (name === "get_execution") {
          // (b') the floor writing the answers of a turn together, as appexec's listener does:
          // what of appexec's gain any `node:http` server could have. For polling only.
          const batched = yield* start(join(root, "packages/bench/dist/servers/raw.js"), [], /port (\d+)/, {
            ...rawEnv,
            BENCH_DB: join(dataDir, "raw-batched.db"),
            BENCH_BATCHED: "1"
          })
          const b2 = yield* measure(`${name}.raw_node_sqlite_batched`, {
            ...request,
            url: `http://127.0.0.1:${batched.match[1]}${path}`
          }, batched.child)
          yield* report({ name: `http.${name}.ratio.appexec_over_raw_batched`, value: a / b2, unit: "x" })
          // (c) the framework floor, for polling only.
          const bare = yield* start(join(root, "packages/bench/dist/servers/bare.js"), [], /port (\d+)/, {
            BENCH_BODY: executionBody
          })
          const c = yield* measure(`${name}.bare_httpapi`, {
            ...request,
            url: `http://127.0.0.1:${bare.match[1]}${path}`
          }, bare.child)
          yield* report({ name: `http.${name}.ratio.appexec_over_bare`, value: a / c, unit: "x" })
        }
      }

      if (only === undefined || only.includes("start_execution_postgres")) {
        yield* startsOnPostgres(dataDir, startBody, report)
      }
    }).pipe(Effect.scoped)
}

/** Runs this benchmark alone. */
export const run = benchmark.run
