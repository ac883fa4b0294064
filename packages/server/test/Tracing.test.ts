/**
 * Traces of `serve`, exported to an in-memory OpenTelemetry exporter: one trace runs from the
 * start request through the worker's run to each webhook attempt, carried across the queue by
 * the trace context stored with the execution and its delivery.
 */
import { TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Logger, LogLevel } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { defaultAppsDir } from "../src/Bootstrap.js"
import { serve } from "../src/Serve.js"
import * as Tracing from "../src/Tracing.js"
import { startServe, tempDataDir } from "./support/ServeProcess.js"

/** Polls `check` every 50 ms until it answers something, for at most 20 s. */
const eventually = <A>(what: string, check: () => A | undefined) =>
  Effect.gen(function*() {
    for (let i = 0; i < 400; i++) {
      const found = check()
      if (found !== undefined) return found
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage(`timed out waiting for ${what}`)
  })

describe("tracing", () => {
  it.scopedLive(
    "one trace from the start request, in the caller's trace, through the worker's run to each webhook attempt",
    () =>
      Effect.gen(function*() {
        const exporter = new InMemorySpanExporter()
        const dataDir = yield* Effect.acquireRelease(
          Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-tracing-"))),
          (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
        )
        // The first attempt fails, the retry is delivered: two attempts, both in the trace.
        const receiver = yield* TestReceiver.start((request) => (request.number === 1 ? 500 : 200))
        const printed: Array<string> = []
        const console = yield* Effect.console
        yield* serve({
          port: 0,
          host: "127.0.0.1",
          dataDir,
          appsDir: defaultAppsDir,
          allowPrivateNetworks: true,
          rateLimit: 1000,
          trustProxy: 0,
          webhookRetryDelays: ["200 millis"],
          tracing: Tracing.layer({ spanProcessor: new SimpleSpanProcessor(exporter) })
        }).pipe(
          Effect.withConsole({ ...console, log: (...args) => Effect.sync(() => void printed.push(args.join(" "))) }),
          Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)),
          Effect.forkScoped
        )
        const [, key, baseUrl] = yield* eventually(
          "the first start's key",
          () =>
            /curl -H 'x-api-key: (aex_\S+)' (http:\/\/127\.0\.0\.1:\d+)\/v1\/apps/.exec(printed.join("\n")) ?? undefined
        )
        const headers = { "x-api-key": key!, "content-type": "application/json" }
        const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
        const callerSpan = "00f067aa0ba902b7"
        const apps = yield* Effect.promise(() => fetch(`${baseUrl}/v1/apps`, { headers }).then((r) => r.json()))
        const greeting = (apps as { data: Array<{ appId: string; name: string }> }).data.find((a) =>
          a.name === "Greeting"
        )!
        const started = yield* Effect.promise(() =>
          fetch(`${baseUrl}/v1/apps/${greeting.appId}/executions?webhook=${encodeURIComponent(receiver.url())}`, {
            method: "POST",
            // The caller's own trace: the request joins it.
            headers: { ...headers, traceparent: `00-${callerTrace}-${callerSpan}-01` },
            body: JSON.stringify({ inputs: { who: "Ann" } })
          }).then((r) => r.json() as Promise<{ data: { executionId: string } }>)
        )
        const executionId = started.data.executionId
        yield* eventually("two webhook attempts", () => (receiver.of(executionId).length === 2 ? true : undefined))

        const spans = yield* eventually("both attempts' spans", () => {
          const finished = exporter.getFinishedSpans()
          return finished.filter((s) => s.name === "WebhookDispatcher.deliver").length === 2 ? finished : undefined
        })
        const request = spans.find((s) =>
          s.name === "http POST" && s.attributes["http.route"] === "/v1/apps/:appId/executions"
        )!
        expect(request.attributes["http.response.status_code"]).toBe(202)
        const traceId = request.spanContext().traceId
        expect(traceId).toBe(callerTrace)
        expect(request.parentSpanContext?.spanId).toBe(callerSpan)
        const trace = spans.filter((s) => s.spanContext().traceId === traceId)
        const named = (name: string) => trace.filter((s) => s.name === name)
        const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId
        const start = named("Appexec.executions.start")
        const run = named("Worker.process")
        const attempts = named("WebhookDispatcher.deliver")
        expect(start).toHaveLength(1)
        expect(run).toHaveLength(1)
        expect(attempts).toHaveLength(2)
        expect(parentOf(start[0]!)).toBe(request.spanContext().spanId)
        expect(parentOf(run[0]!)).toBe(start[0]!.spanContext().spanId)
        for (const attempt of attempts) expect(parentOf(attempt)).toBe(run[0]!.spanContext().spanId)
        expect(attempts.map((a) => a.attributes["appexec.webhook.outcome"]).sort()).toEqual(["Delivered", "Failed"])
        expect([...new Set(trace.map((s) => s.name))]).toEqual(
          expect.arrayContaining([
            "http POST",
            "Appexec.executions.start",
            "Worker.process",
            "WebhookDispatcher.deliver"
          ])
        )
      }),
    60_000
  )

  it.scopedLive(
    "appexec serve exports its spans over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set",
    () =>
      Effect.gen(function*() {
        // A collector: records what is posted to it.
        const posts: Array<{ readonly url: string; readonly body: string }> = []
        const collector = createServer((request, response) => {
          const chunks: Array<Buffer> = []
          request.on("data", (chunk: Buffer) => chunks.push(chunk))
          request.on("end", () => {
            posts.push({ url: request.url ?? "", body: Buffer.concat(chunks).toString("utf8") })
            response.writeHead(200, { "content-type": "application/json" }).end("{}")
          })
        })
        const port = yield* Effect.acquireRelease(
          Effect.async<number>((resume) => {
            collector.listen(0, "127.0.0.1", () => resume(Effect.succeed((collector.address() as AddressInfo).port)))
          }),
          () => Effect.async<void>((resume) => void collector.close(() => resume(Effect.void)))
        )
        const dataDir = yield* tempDataDir
        const serve = yield* startServe(dataDir, [], {
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
          OTEL_SERVICE_NAME: "appexec-under-test"
        })
        const listed = yield* Effect.promise(() =>
          fetch(`${serve.baseUrl}/v1/apps`, { headers: { "x-api-key": serve.key } })
        )
        expect(listed.status).toBe(200)
        // Spans are exported in batches; stopping flushes what is left.
        serve.child.kill("SIGTERM")
        expect((yield* serve.exited("30 seconds")).code).toBe(0)
        const traces = posts.filter((p) => p.url === "/v1/traces")
        expect(traces.length).toBeGreaterThan(0)
        const exported = traces.map((p) => p.body).join("\n")
        expect(exported).toContain("appexec-under-test")
        expect(exported).toContain("http GET")
        expect(exported).toContain("/v1/apps")
      }),
    60_000
  )
})
