/**
 * The log of real `serve` and `worker` processes with `APPEXEC_LOG_FORMAT=json` (docs/logging.md):
 * every line on stderr is one JSON object with a string `message`, a lower-case `level` and an ISO
 * `time`; the start-up lines are among them; a request line carries the client's address, behind
 * `--trust-proxy` the one the proxy appended; stdout holds only the first key and its curl line.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

const levels = new Set(["trace", "debug", "info", "warn", "error", "fatal"])

/** Every line of `stderr`, parsed; each checked to be one JSON object of the shape. */
const linesOf = (stderr: string): Array<Record<string, unknown>> =>
  stderr.split("\n").filter((line) => line !== "").map((line) => {
    const parsed: unknown = JSON.parse(line)
    expect(typeof parsed, line).toBe("object")
    const fields = parsed as Record<string, unknown>
    expect(Object.keys(fields).slice(0, 3), line).toEqual(["time", "level", "message"])
    expect(typeof fields["message"], line).toBe("string")
    expect(levels.has(String(fields["level"])), line).toBe(true)
    expect(new Date(String(fields["time"])).toISOString(), line).toBe(fields["time"])
    return fields
  })

describe("the JSON log of appexec", () => {
  it.live(
    "serve and worker write only JSON lines on stderr, start-up lines included; a request line has its client",
    () =>
      Effect.gen(function*() {
        const data = yield* tempDataDir
        const serve = yield* startServe(data, ["--trust-proxy", "1", "--admin-port", "0"], {
          APPEXEC_LOG_LEVEL: "debug"
        })
        const answer = yield* Effect.promise(() =>
          fetch(`${serve.baseUrl}/v1/apps`, {
            headers: { "x-api-key": serve.key, "x-forwarded-for": "198.51.100.7, 203.0.113.9" }
          })
        )
        expect(answer.status).toBe(200)
        yield* serve.waitFor(/"message":"GET \/v1\/apps 200 \d+ms"/, "stderr")
        const worker = yield* spawnAppexec(["worker", "--data", data])
        yield* worker.waitFor(/appexec worker is running/, "stderr")
        for (const running of [serve, worker]) {
          running.child.kill("SIGTERM")
          expect((yield* running.exited("30 seconds")).code).toBe(0)
        }

        const served = linesOf(serve.output.stderr)
        expect(served.find((l) => String(l["message"]).startsWith("appexec is listening on "))).toMatchObject({
          level: "info",
          url: serve.baseUrl
        })
        expect(served.find((l) => String(l["message"]).startsWith("Metrics: "))).toMatchObject({ level: "info" })
        expect(served.find((l) => l["route"] === "/v1/apps")).toMatchObject({
          level: "debug",
          method: "GET",
          status: 200,
          client: "203.0.113.9"
        })
        expect(served.at(-1)).toMatchObject({ level: "info", message: "stopped" })
        expect(serve.output.stdout).toBe(
          `API key of workspace "default" (shown once, keep it): ${serve.key}\n` +
            `Try it:\n  curl -H 'x-api-key: ${serve.key}' ${serve.baseUrl}/v1/apps\n`
        )

        const worked = linesOf(worker.output.stderr)
        expect(worked.find((l) => String(l["message"]).startsWith("appexec worker is running"))).toMatchObject({
          level: "info"
        })
        expect(worker.output.stdout).toBe("")
      }).pipe(Effect.scoped),
    90_000
  )
})
