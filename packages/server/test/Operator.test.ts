/**
 * The operator's surface of `appexec serve` as a process on a real socket: health, readiness, the
 * OpenAPI document and the reference page on the main port; Prometheus metrics on `--admin-port`
 * after an execution ran, and its operator views only at its own address or an allowed name; `appexec executions list` and `appexec prune` beside the running server.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { request as httpRequest } from "node:http"
import { bin } from "./support/Bin.js"
import { spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

const fetchText = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, type: response.headers.get("content-type"), text: await response.text() }
  })

/** Runs `appexec …args` to completion. */
const appexec = (...args: Array<string>) =>
  Effect.async<{ stdout: string; stderr: string; code: number }>((resume) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, APPEXEC_LOG_FORMAT: "json" } }, (
      error,
      stdout,
      stderr
    ) => resume(Effect.succeed({ stdout, stderr, code: error === null ? 0 : Number(error.code ?? 1) })))
  })

/** The status of a GET sent with `host` as its `Host` header (which `fetch` does not let a caller set). */
const statusWithHost = (url: string, host: string) =>
  Effect.async<number>((resume) => {
    const request = httpRequest(url, { headers: { host } }, (response) => {
      response.resume()
      response.on("end", () => resume(Effect.succeed(response.statusCode ?? 0)))
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end()
  })

/** The value of the series `series` (name and labels) in Prometheus text. */
const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe("operator surface of appexec serve", () => {
  it.scoped(
    "health, readiness, OpenAPI and docs on the main port; metrics on the admin port; executions list and prune",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const serve = yield* startServe(dataDir, [
          "--admin-port",
          "0",
          "--retention",
          "30d",
          "--admin-allowed-hosts",
          "ops.internal, Other.Internal:1"
        ])
        const [, metricsUrl] = yield* serve.waitFor(/Metrics: (http:\/\/127\.0\.0\.1:\d+\/metrics)/, "stderr")
        const { baseUrl, key } = serve

        expect(yield* fetchText(`${baseUrl}/healthz`)).toMatchObject({ status: 200, text: "{\"status\":\"ok\"}" })
        expect(yield* fetchText(`${baseUrl}/readyz`)).toMatchObject({ status: 200, text: "{\"status\":\"ok\"}" })
        const openapi = yield* fetchText(`${baseUrl}/openapi.json`)
        expect(openapi.status).toBe(200)
        expect(Object.keys(JSON.parse(openapi.text).paths)).toEqual(
          expect.arrayContaining(["/v1/apps/{appId}/executions", "/healthz", "/readyz", "/openapi.json", "/docs"])
        )
        const docs = yield* fetchText(`${baseUrl}/docs`)
        expect(docs.status).toBe(200)
        expect(docs.type).toBe("text/html; charset=utf-8")
        expect(docs.text).toContain("<title>appexec</title>")
        // Not on the admin port, and no metrics on the main one.
        expect((yield* fetchText(`${baseUrl}/metrics`)).status).toBe(404)

        const apps = JSON.parse((yield* fetchText(`${baseUrl}/v1/apps`, { headers: { "x-api-key": key } })).text)
        const greeting = apps.data.find((a: { name: string }) => a.name === "Greeting").appId
        const started = yield* fetchText(`${baseUrl}/v1/apps/${greeting}/executions`, {
          method: "POST",
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: JSON.stringify({ inputs: { who: "Ann" } })
        })
        expect(started.status).toBe(202)
        const executionId: string = JSON.parse(started.text).data.executionId
        yield* serve.waitFor(new RegExp(`execution ${executionId} completed`), "stderr")

        const metrics = yield* fetchText(metricsUrl!)
        expect(metrics.status).toBe(200)
        expect(metrics.type).toBe("text/plain; version=0.0.4; charset=utf-8")
        expect(valueOf(metrics.text, "appexec_executions_started_total")).toBe(1)
        expect(valueOf(metrics.text, "appexec_executions_finished_total{status=\"completed\"}")).toBe(1)
        expect(valueOf(metrics.text, "appexec_executions_finished_total{status=\"failed\"}")).toBe(0)
        expect(valueOf(metrics.text, "appexec_queue_depth{scope=\"database\"}")).toBe(0)
        expect(valueOf(metrics.text, "appexec_execution_duration_seconds_count")).toBe(1)
        expect(valueOf(metrics.text, "appexec_execution_duration_seconds_bucket{le=\"+Inf\"}")).toBe(1)
        expect(valueOf(metrics.text, "appexec_webhook_deliveries_total{outcome=\"delivered\"}")).toBe(0)
        expect(
          valueOf(metrics.text, "appexec_http_requests_total{route=\"/v1/apps/:appId/executions\",status=\"202\"}")
        )
          .toBe(1)
        expect(valueOf(metrics.text, "appexec_http_requests_total{route=\"/healthz\",status=\"200\"}")).toBe(1)
        expect(metrics.text).toContain("# TYPE appexec_execution_duration_seconds histogram")
        const adminHealth = yield* fetchText(metricsUrl!.replace(/\/metrics$/, "/healthz"))
        expect(adminHealth.status).toBe(200)
        // The operator views answer their own address and the allowed names, not another site's name (DNS rebinding).
        const operatorUrl = metricsUrl!.replace(/\/metrics$/, "/operator")
        const adminPort = new URL(operatorUrl).port
        expect((yield* fetchText(operatorUrl)).status).toBe(200)
        expect(yield* statusWithHost(operatorUrl, "ops.internal:8443")).toBe(200)
        expect(yield* statusWithHost(operatorUrl, "other.internal:1")).toBe(200)
        expect(yield* statusWithHost(operatorUrl, "other.internal:2")).toBe(403)
        expect(yield* statusWithHost(operatorUrl, `evil.example:${adminPort}`)).toBe(403)

        const listed = yield* appexec("executions", "list", "--data", dataDir)
        expect(listed.code).toBe(0)
        expect(listed.stdout).toMatch(
          // Finished: no worker holds it, the last column is empty.
          new RegExp(`^${executionId}\tcompleted\t[0-9a-f-]{36}\t${greeting}\t\\S+Z\t\\S+Z\t1\t\n$`)
        )
        expect((yield* appexec("executions", "list", "--status", "failed", "--data", dataDir)).stdout).toBe("")
        expect(
          (yield* appexec("executions", "list", "--workspace", "default", "--limit", "1", "--data", dataDir)).stdout
        )
          .toContain(executionId)
        const unknown = yield* appexec("executions", "list", "--workspace", "nobody", "--data", dataDir)
        expect(unknown.code).toBe(1)
        expect(unknown.stderr).toContain("No workspace is named 'nobody'.")

        expect((yield* appexec("prune", "--data", dataDir)).stdout).toBe("deleted 0\n")
        expect((yield* appexec("prune", "--retention", "0ms", "--data", dataDir)).stdout).toBe("deleted 1\n")
        expect((yield* appexec("executions", "list", "--data", dataDir)).stdout).toBe("")
        const gone = yield* fetchText(`${baseUrl}/v1/executions/${executionId}`, { headers: { "x-api-key": key } })
        expect(gone.status).toBe(404)

        serve.child.kill("SIGTERM")
        expect((yield* serve.exited("30 seconds")).code).toBe(0)
      }),
    90_000
  )

  it.scoped("appexec worker answers /healthz and /metrics on --admin-port", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const worker = yield* spawnAppexec(["worker", "--data", dataDir, "--admin-port", "0"])
      const [, metricsUrl] = yield* worker.waitFor(/Metrics: (http:\/\/127\.0\.0\.1:\d+)\/metrics/, "stderr")
      expect(yield* fetchText(`${metricsUrl}/healthz`)).toMatchObject({ status: 200, text: "{\"status\":\"ok\"}" })
      const metrics = yield* fetchText(`${metricsUrl}/metrics`)
      expect(metrics.status).toBe(200)
      expect(metrics.type).toBe("text/plain; version=0.0.4; charset=utf-8")
      // The database's gauges are the API processes' to export; the worker's metrics are its own.
      expect(valueOf(metrics.text, "appexec_queue_depth{scope=\"database\"}")).toBeUndefined()
      expect(valueOf(metrics.text, "appexec_executions_started_total")).toBe(0)
      expect((yield* fetchText(`${metricsUrl}/v1/apps`)).status).toBe(404)
      worker.child.kill("SIGTERM")
      expect((yield* worker.exited("30 seconds")).code).toBe(0)
    }))
})
