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
 * Figures: req/s, p50 and p99 latency of each, and the ratio a/b per endpoint (a/b' and a/c for polling).
 * `BENCH_HTTP_SECONDS` shortens the runs; `BENCH_HTTP_PROFILE=dir` runs the servers under
 * `node --cpu-prof` and leaves the profiles in `dir`; `BENCH_APPEXEC_BIN` runs another build of
 * the `appexec` command; `BENCH_HTTP_ENDPOINTS=get_execution,list_apps` measures only those.
 */
import autocannon from "autocannon"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Benchmark } from "./Benchmark.js"
import * as ProcessCpu from "./ProcessCpu.js"

const root = fileURLToPath(new URL("../../../", import.meta.url))
const seconds = Number(process.env.BENCH_HTTP_SECONDS ?? 10)
const profileDir = process.env.BENCH_HTTP_PROFILE

/** Starts `node [--cpu-prof] script args`; resolves with the process and the first stdout match. */
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
      child.stderr!.resume()
      let out = ""
      child.stdout!.on("data", (d) => {
        out += String(d)
        const match = pattern.exec(out)
        if (match !== null) resume(Effect.succeed({ child, match }))
      })
      child.once("exit", (code) => resume(Effect.fail(new Error(`${script} exited with ${code}`))))
    }),
    ({ child }) =>
      Effect.async<void>((resume) => {
        if (child.exitCode !== null) return resume(Effect.void)
        child.once("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      })
  )

/** What one load sends. */
interface Load {
  readonly url: string
  readonly method?: "GET" | "POST"
  readonly headers: Record<string, string>
  readonly body?: string
}

/** One autocannon run. */
const load = ({ body, headers, method = "GET", url }: Load) =>
  Effect.async<autocannon.Result, Error>((resume) => {
    autocannon(
      { url, method, connections: 50, duration: seconds, headers, ...(body === undefined ? {} : { body }) },
      (error, result) => resume(error ? Effect.fail(error) : Effect.succeed(result))
    )
  })

/** The benchmark. */
export const benchmark: Benchmark = {
  name: "http",
  run: (report) =>
    Effect.gen(function*() {
      const dataDir = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-bench-http-"))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      // (a) appexec serve on SQLite, with a rate limit no run reaches.
      const appexec = yield* start(
        process.env.BENCH_APPEXEC_BIN ?? join(root, "packages/server/dist/appexec.js"),
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
    }).pipe(Effect.scoped)
}

/** Runs this benchmark alone. */
export const run = benchmark.run
