/**
 * Stops a load balancer can follow (docs/operations.md#stopping), through the compiled command:
 * on SIGTERM `serve --stop-delay` answers `/readyz` 503 at once while it still serves requests for
 * the delay, then ends its open event streams with a `reconnect` event and closes the listener.
 * And readiness against liveness (docs/operations.md#health-readiness-the-document-and-the-reference-page):
 * a database that refuses connections turns `/readyz` 503 on the API's main port and on a worker's
 * admin port while `/healthz` stays 200, and both are ready again once it is back.
 */
import { describe, expect, it } from "@effect/vitest"
import { type Duration, Effect, Schedule } from "effect"
import { request as httpRequest } from "node:http"
import pg from "pg"
import { inject } from "vitest"
import { postgres } from "./support/Backends.js"
import { spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

/** The status and JSON body of `GET url`, or `refused` when nothing listens there any more. */
const probe = (url: string, init: RequestInit = {}) =>
  Effect.promise(() =>
    fetch(url, init).then(
      async (response) => ({ status: response.status, body: (await response.json()) as unknown }),
      () => "refused" as const
    )
  )

/** Retries `check` every 20 ms until it holds, for at most `within`. */
const eventually = <A>(
  what: string,
  check: Effect.Effect<A>,
  holds: (a: A) => boolean,
  within: Duration.DurationInput
) =>
  check.pipe(
    Effect.filterOrFail(holds, (a) => new Error(`not yet: ${what} (${JSON.stringify(a)})`)),
    Effect.retry(Schedule.spaced("20 millis")),
    Effect.timeoutFail({ duration: within, onTimeout: () => new Error(`${what}: not within ${within}`) })
  )

/**
 * Opens an event stream on a connection of its own: what it has received so far, and when it
 * ended (epoch ms), as the socket tells.
 */
const openStream = (url: string, key: string) =>
  Effect.async<{ readonly text: () => string; readonly endedAt: () => number | undefined }, Error>((resume) => {
    let text = ""
    let endedAt: number | undefined
    const req = httpRequest(url, { headers: { accept: "text/event-stream", "x-api-key": key } }, (res) => {
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (text += chunk))
      res.on("end", () => (endedAt ??= Date.now()))
      res.on("close", () => (endedAt ??= Date.now()))
      resume(Effect.succeed({ text: () => text, endedAt: () => endedAt }))
    })
    req.on("error", (error) => resume(Effect.fail(error)))
    req.end()
  })

/** Starts the Slow echo app (30 s): its execution id. */
const startSlowEcho = (serve: { readonly baseUrl: string; readonly key: string }) =>
  Effect.gen(function*() {
    const headers = { "x-api-key": serve.key, "content-type": "application/json" }
    const apps = yield* Effect.promise(() =>
      fetch(`${serve.baseUrl}/v1/apps?search=slow%20echo`, { headers }).then((r) => r.json())
    )
    const app = (apps as { data: Array<{ appId: string; name: string }> }).data.find((a) => a.name === "Slow echo")!
    const started = yield* Effect.promise(() =>
      fetch(`${serve.baseUrl}/v1/apps/${app.appId}/executions`, {
        method: "POST",
        headers,
        body: JSON.stringify({ inputs: { message: "hello" } })
      }).then((r) => r.json())
    )
    return (started as { data: { executionId: string } }).data.executionId
  })

describe("serve --stop-delay", () => {
  it.scopedLive(
    "SIGTERM: /readyz 503 at once, requests served for the delay, then a reconnect event on open streams and the listener closed",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const serve = yield* startServe(dataDir, ["--stop-delay", "2s", "--drain-timeout", "0s"])
        const id = yield* startSlowEcho(serve)
        const poll = `${serve.baseUrl}/v1/executions/${id}`
        const stream = yield* openStream(`${poll}/events`, serve.key)
        yield* eventually("the stream's first event", Effect.sync(stream.text), (t) =>
          t.includes("event: execution"), "10 seconds")
        expect(yield* probe(`${serve.baseUrl}/readyz`)).toEqual({ status: 200, body: { status: "ok" } })

        const signalledAt = Date.now()
        serve.child.kill("SIGTERM")
        yield* eventually(
          "/readyz 503",
          probe(`${serve.baseUrl}/readyz`),
          (answer) =>
            answer !== "refused" && answer.status === 503,
          "1 second"
        )
        const unready = Date.now() - signalledAt
        expect(yield* probe(`${serve.baseUrl}/readyz`)).toEqual({
          status: 503,
          body: { status: "unavailable", reason: "draining" }
        })
        // Still served during the delay: a poll answers, the stream goes on.
        const polled = yield* probe(poll, { headers: { "x-api-key": serve.key } })
        expect(polled).toMatchObject({ status: 200, body: { data: { executionId: id } } })
        expect(Date.now() - signalledAt).toBeLessThan(2000)
        expect(stream.text()).not.toContain("event: reconnect")

        // Then the stream is told to reconnect elsewhere, and ends; the listener closes.
        yield* eventually("the stream's end", Effect.sync(stream.endedAt), (at) =>
          at !== undefined, "10 seconds")
        const streamEnded = stream.endedAt()! - signalledAt
        expect(streamEnded).toBeGreaterThanOrEqual(1900)
        expect(stream.text()).toMatch(
          /\n\nevent: reconnect\nretry: 1000\ndata: \{"reason":"the server is stopping; reconnect with Last-Event-ID"\}\n\n$/
        )
        expect(yield* serve.exited("20 seconds")).toEqual({ code: 0, signal: null })
        expect(yield* probe(`${serve.baseUrl}/readyz`)).toBe("refused")
        expect(serve.output.stderr).toContain(
          "stopping: /readyz answers 503; serving requests for 2s more before closing the listener"
        )
        console.log(`/readyz 503 ${unready} ms after SIGTERM; stream told to reconnect after ${streamEnded} ms`)
      }),
    60_000
  )

  it.scopedLive("a second SIGTERM cuts the delay short", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const serve = yield* startServe(dataDir, ["--stop-delay", "60s", "--no-worker"])
      const signalledAt = Date.now()
      serve.child.kill("SIGTERM")
      yield* serve.waitFor(/serving requests for 1m more before closing the listener/, "stderr")
      // Served, unready, past the half second within which a second signal counts as the same one.
      yield* eventually(
        "half a second of the delay, served",
        Effect.zip(probe(`${serve.baseUrl}/readyz`), probe(`${serve.baseUrl}/healthz`)),
        ([ready, live]) =>
          ready !== "refused" && ready.status === 503 && live !== "refused" && live.status === 200 &&
          Date.now() - signalledAt > 600,
        "5 seconds"
      )
      const again = Date.now()
      serve.child.kill("SIGTERM")
      expect(yield* serve.exited("10 seconds")).toEqual({ code: 0, signal: null })
      expect(Date.now() - again).toBeLessThan(3000)
    }), 60_000)
})

describe("readiness through a database outage (PostgreSQL)", () => {
  it.scopedLive(
    "/readyz turns 503 on the API and on a worker's admin port while /healthz stays 200; both ready again after",
    () =>
      Effect.gen(function*() {
        const env = yield* postgres.env
        const dataDir = yield* tempDataDir
        const api = yield* startServe(dataDir, ["--no-worker"], env)
        const worker = yield* spawnAppexec(["worker", "--data", dataDir, "--admin-port", "0"], env)
        const [, admin] = yield* worker.waitFor(/Metrics: (http:\/\/127\.0\.0\.1:\d+)\/metrics/, "stderr")
        expect(worker.output.stderr).toContain(`(liveness: ${admin}/healthz, readiness: ${admin}/readyz)`)
        const readiness = [`${api.baseUrl}/readyz`, `${admin}/readyz`]
        for (const url of readiness) expect(yield* probe(url)).toEqual({ status: 200, body: { status: "ok" } })

        // The outage: the database refuses new connections and drops the open ones.
        const name = new URL(env["APPEXEC_DATABASE_URL"]!).pathname.slice(1)
        const server = (text: string) =>
          Effect.promise(async () => {
            const client = new pg.Client({ connectionString: inject("postgresUrl") })
            await client.connect()
            try {
              await client.query(text)
            } finally {
              await client.end()
            }
          })
        yield* server(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`)
        yield* Effect.addFinalizer(() => server(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`))
        yield* server(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}'`)
        for (const url of readiness) {
          const answer = yield* eventually(`${url} 503`, probe(url), (a) =>
            a !== "refused" && a.status === 503, "15 seconds")
          expect(answer).toEqual({ status: 503, body: { status: "unavailable", reason: expect.any(String) } })
        }
        for (const url of [`${api.baseUrl}/healthz`, `${admin}/healthz`]) {
          expect(yield* probe(url)).toEqual({ status: 200, body: { status: "ok" } })
        }

        yield* server(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`)
        for (const url of readiness) {
          yield* eventually(`${url} 200 again`, probe(url), (a) =>
            a !== "refused" && a.status === 200, "15 seconds")
        }
        worker.child.kill("SIGTERM")
        api.child.kill("SIGTERM")
        expect((yield* worker.exited("30 seconds")).code).toBe(0)
        expect((yield* api.exited("30 seconds")).code).toBe(0)
      }),
    90_000
  )
})
