/**
 * HTTP benchmark: `GET /v1/executions/{id}` with 50 connections for 10 s (autocannon) against
 * (a) `appexec serve` — auth, rate limit (set high), SQLite; (b) the framework floor, a bare
 * `HttpApi` endpoint returning a constant body; (c) the machine's limit, `node:http` +
 * better-sqlite3 doing the same lookup with auth by hash. Each server runs in its own process.
 *
 * Figures: req/s, p50 and p99 latency of each, and the ratios a/b and a/c.
 * `BENCH_HTTP_SECONDS` shortens the runs; `BENCH_HTTP_PROFILE=dir` runs the servers under
 * `node --cpu-prof` and leaves the profiles in `dir`.
 */
import autocannon from "autocannon"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Benchmark } from "./Benchmark.js"

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
        env: { ...process.env, ...env, APPEXEC_LOG_FORMAT: "json" },
        // Logs stay on (one line per request is part of the cost) but go nowhere.
        stdio: ["ignore", "pipe", "ignore"]
      })
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

/** One autocannon run. */
const load = (url: string, headers: Record<string, string>) =>
  Effect.async<autocannon.Result, Error>((resume) => {
    autocannon({ url, connections: 50, duration: seconds, headers }, (error, result) =>
      resume(error ? Effect.fail(error) : Effect.succeed(result)))
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
        join(root, "packages/server/dist/appexec.js"),
        ["serve", "--port", "0", "--data", dataDir, "--rate-limit", "1000000000"],
        /curl -H 'x-api-key: (aex_[A-Za-z0-9_-]+)' (http:\/\/[^\s]+)\/v1\/apps/
      )
      const [, key, baseUrl] = appexec.match
      const headers = { "x-api-key": key! }
      const apps = yield* Effect.promise(() =>
        fetch(`${baseUrl}/v1/apps`, { headers }).then((r) =>
          r.json() as Promise<{ data: Array<{ appId: string; name: string }> }>
        )
      )
      const greeting = apps.data.find((a) => a.name === "Greeting")!
      const started = yield* Effect.promise(() =>
        fetch(`${baseUrl}/v1/apps/${greeting.appId}/executions`, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify({ inputs: { who: "bench" } })
        }).then((r) => r.json() as Promise<{ data: { executionId: string } }>)
      )
      const executionId = started.data.executionId
      const body = yield* Effect.promise(() =>
        fetch(`${baseUrl}/v1/executions/${executionId}`, { headers }).then((r) => r.text())
      )

      const bare = yield* start(join(root, "packages/bench/dist/servers/bare.js"), [], /port (\d+)/, {
        BENCH_BODY: body
      })
      const raw = yield* start(join(root, "packages/bench/dist/servers/raw.js"), [], /port (\d+)/, {
        BENCH_BODY: body,
        BENCH_KEY: key!,
        BENCH_EXECUTION_ID: executionId
      })
      const targets: Array<[string, string]> = [
        ["appexec", `${baseUrl}/v1/executions/${executionId}`],
        ["bare_httpapi", `http://127.0.0.1:${bare.match[1]}/v1/executions/${executionId}`],
        ["raw_node_sqlite", `http://127.0.0.1:${raw.match[1]}/v1/executions/${executionId}`]
      ]
      const rps: Record<string, number> = {}
      for (const [name, url] of targets) {
        const result = yield* load(url, headers)
        if (result.non2xx > 0 || result.errors > 0) {
          return yield* Effect.fail(new Error(`${name}: ${result.non2xx} non-2xx answers and ${result.errors} errors`))
        }
        rps[name] = result.requests.average
        yield* report({ name: `http.${name}.requests`, value: result.requests.average, unit: "req/s" })
        yield* report({ name: `http.${name}.p50`, value: result.latency.p50, unit: "ms" })
        yield* report({ name: `http.${name}.p99`, value: result.latency.p99, unit: "ms" })
      }
      yield* report({ name: "http.ratio.appexec_over_bare", value: rps.appexec! / rps.bare_httpapi!, unit: "x" })
      yield* report({ name: "http.ratio.appexec_over_raw", value: rps.appexec! / rps.raw_node_sqlite!, unit: "x" })
    }).pipe(Effect.scoped)
}

/** Runs this benchmark alone. */
export const run = benchmark.run
