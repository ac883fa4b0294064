/**
 * Many processes on one PostgreSQL database, as an operator deploys them (docs/scaling.md): API
 * processes (`serve --no-worker`) and worker processes (`worker`) of the compiled command. Hundreds
 * of executions started through two APIs all complete while a worker is killed with SIGKILL and
 * replaced, each completed once and its webhook delivered; both APIs count one rate limit; a
 * worker that loses its database gives its run up once its lease can no longer be renewed, and
 * another worker finishes it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ChildProcess } from "node:child_process"
import { writeFileSync } from "node:fs"
import { createServer as createHttpServer } from "node:http"
import { type AddressInfo, connect, createServer as createNetServer, type Socket } from "node:net"
import { join } from "node:path"
import { postgres, query } from "./support/Backends.js"
import { restartServe, spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

/** An app whose one step waits `ms`, so that runs overlap and a kill lands in the middle of some. */
const slowApp = (name: string, ms: number) => ({
  name,
  public: true,
  nodes: [
    { id: "message", type: "input.text", label: "Message", config: { name: "message", required: true } },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms } },
    { id: "reply", type: "output.text", label: "Reply" }
  ],
  edges: [
    { source: "message", target: "wait" },
    { source: "wait", target: "reply" }
  ]
})

const json = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    // Only the fields read below matter; the shapes are the API's, tested in @appexec/http.
    return { status: response.status, headers: response.headers, body: (await response.json()) as any }
  })

/** Waits (polling every 200 ms, at most `within` ms) until `check` holds. */
const waitUntil = (what: string, check: Effect.Effect<boolean>, within: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + within
    while (!(yield* check)) {
      if (Date.now() > deadline) return yield* Effect.dieMessage(`${what}: not within ${within} ms`)
      yield* Effect.sleep("200 millis")
    }
  })

/** A webhook receiver on 127.0.0.1 that answers 204 and records each request id; closed with the scope. */
const startReceiver = Effect.acquireRelease(
  Effect.async<{ readonly url: string; readonly requestIds: Array<string>; readonly close: () => void }>((resume) => {
    const requestIds: Array<string> = []
    const server = createHttpServer((req, res) => {
      req.resume()
      req.on("end", () => {
        requestIds.push(String(req.headers["x-service-webhook-request-id"]))
        res.writeHead(204).end()
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
        requestIds,
        close: () => server.close()
      })))
  }),
  (receiver) => Effect.sync(() => receiver.close())
)

/** `appexec worker` on the database of `env`; resolves once it runs. */
const startWorker = (env: Record<string, string>, lease = "3s") =>
  Effect.gen(function*() {
    const dataDir = yield* tempDataDir
    const worker = yield* spawnAppexec(
      [
        "worker",
        "--data",
        dataDir,
        "--lease",
        lease,
        "--allow-private-networks",
        "--webhook-retry-delays",
        "1s,1s,1s",
        // A delivery the killed worker had claimed is sent again 3 s later, not 40 s.
        "--webhook-timeout",
        "2s",
        "--webhook-claim-margin",
        "1s"
      ],
      env
    )
    yield* worker.waitFor(/appexec worker is running/, "stderr", "20 seconds")
    return worker
  })

/** Ids of the executions a process logged as reaching `status`. */
const logged = (stderr: string, status: string) =>
  [...stderr.matchAll(new RegExp(`"message":"execution ([0-9a-f-]{36}) ${status}"`, "g"))].map((m) => m[1]!)

/**
 * A TCP proxy on 127.0.0.1 in front of `port`: `cut` closes it and every connection through it,
 * as a lost network does to the processes behind it.
 */
const startProxy = (port: number) =>
  Effect.acquireRelease(
    Effect.async<{ readonly port: number; readonly cut: () => void }>((resume) => {
      const sockets = new Set<Socket>()
      const server = createNetServer((client) => {
        const upstream = connect(port, "127.0.0.1")
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on("close", () => sockets.delete(socket))
          socket.on("error", () => {})
        }
        client.pipe(upstream).pipe(client)
      })
      const cut = () => {
        server.close()
        for (const socket of sockets) socket.destroy()
      }
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ port: (server.address() as AddressInfo).port, cut })))
    }),
    (proxy) => Effect.sync(() => proxy.cut())
  )

/**
 * SIGKILLs `child`, a worker, at a moment it holds at least one claim, as the database shows it.
 * The worker is first stopped (SIGSTOP), so that it can finish nothing while its claims are read:
 * an execution it logged as running (`runningIds`) whose row still names a lease holder was claimed
 * by it and not finished. Otherwise it is resumed and looked at again (every 100 ms, at most 300
 * times).
 */
const killHoldingClaim = (env: Record<string, string>, child: ChildProcess, runningIds: () => ReadonlyArray<string>) =>
  Effect.gen(function*() {
    for (let round = 0;; round++) {
      child.kill("SIGSTOP")
      const [held] = yield* query<{ n: number }>(
        env,
        "SELECT count(*)::int AS n FROM executions WHERE execution_id = ANY($1) AND lease_worker IS NOT NULL",
        [[...runningIds()]]
      )
      if (held!.n > 0) return void child.kill("SIGKILL")
      child.kill("SIGCONT")
      if (round >= 300) return yield* Effect.dieMessage("the worker to kill never held a claim")
      yield* Effect.sleep("100 millis")
    }
  })

describe("many processes on one PostgreSQL database", () => {
  it.live(
    "two APIs and three workers: 300 executions complete once each through a SIGKILL, every webhook arrives",
    () =>
      Effect.gen(function*() {
        const env = yield* postgres.env
        const appsDir = yield* tempDataDir
        // Runs of 300 ms: long enough that a worker is caught holding one on a quiet machine too.
        writeFileSync(join(appsDir, "slow.json"), JSON.stringify(slowApp("Slow step", 300)))
        const receiver = yield* startReceiver
        // The receiver is on loopback: the APIs accept its URL, the workers reach it.
        const apiA = yield* startServe(yield* tempDataDir, [
          "--no-worker",
          "--apps",
          appsDir,
          "--rate-limit",
          "100000",
          "--allow-private-networks"
        ], env)
        const apiB = yield* restartServe(yield* tempDataDir, [
          "--no-worker",
          "--rate-limit",
          "100000",
          "--allow-private-networks"
        ], env)
        const workers = [yield* startWorker(env), yield* startWorker(env), yield* startWorker(env)]
        const headers = { "x-api-key": apiA.key, "content-type": "application/json" }
        const apps = yield* json(`${apiA.baseUrl}/v1/apps`, { headers })
        const appId: string = apps.body.data.find((a: { name: string }) => a.name === "Slow step").appId

        const total = 300
        const started = yield* Effect.forEach(
          Array.from({ length: total }, (_, i) => i),
          (i) =>
            json(
              `${(i % 2 === 0 ? apiA : apiB).baseUrl}/v1/apps/${appId}/executions?webhook=${
                encodeURIComponent(receiver.url)
              }`,
              { method: "POST", headers, body: JSON.stringify({ inputs: { message: `run ${i}` } }) }
            ).pipe(Effect.map((r) => ({ status: r.status, executionId: String(r.body.data?.executionId), i }))),
          { concurrency: 16 }
        )
        expect(started.filter((s) => s.status !== 202)).toEqual([])
        const ids = started.map((s) => s.executionId)

        const completedCount = query<{ n: number }>(
          env,
          "SELECT count(*)::int AS n FROM executions WHERE status = 'completed'"
        ).pipe(Effect.map((rows) => rows[0]!.n))
        yield* waitUntil(
          "a tenth of the executions complete",
          Effect.map(completedCount, (n) => n >= total / 10),
          30_000
        )
        // SIGKILL in the middle of its runs; a new worker takes its place.
        const victim = workers[0]!
        yield* killHoldingClaim(env, victim.child, () => logged(victim.output.stderr, "running"))
        yield* victim.exited("10 seconds")
        workers.push(yield* startWorker(env))

        yield* waitUntil("every execution completes", Effect.map(completedCount, (n) => n === total), 40_000)
        const rows = yield* query<{ execution_id: string; status: string; outputs: string; inputs: string }>(
          env,
          "SELECT execution_id, status, outputs, inputs FROM executions"
        )
        expect(rows.length).toBe(total)
        for (const row of rows) {
          expect(row.status).toBe("completed")
          expect(JSON.parse(row.outputs)[0].value).toBe(JSON.parse(row.inputs).message)
        }
        // Completed once: no execution is logged as completed by two workers.
        const completions = workers.flatMap((w) => logged(w.output.stderr, "completed"))
        expect(completions.length).toBe(new Set(completions).size)
        // The claims the kill cut short (some before their run was even recorded as running) were
        // claimed again once their lease ran out, and finished by the others.
        const reclaimed = (yield* query<{ execution_id: string }>(
          env,
          "SELECT execution_id FROM executions WHERE claims > 1"
        )).map((r) => r.execution_id)
        expect(reclaimed.length).toBeGreaterThan(0)
        const others = new Set(workers.slice(1).flatMap((w) => logged(w.output.stderr, "completed")))
        expect(reclaimed.filter((id) => !others.has(id))).toEqual([])

        // Every execution's webhook arrives, named by its request id (a repeat would carry the same id).
        yield* waitUntil(
          "every webhook arrives",
          Effect.sync(() => new Set(receiver.requestIds).size >= total),
          20_000
        )
        expect(new Set(receiver.requestIds)).toEqual(new Set(ids))
        // A delivery the killed worker had sent but not yet recorded is sent again once its claim
        // expires (at least once): every delivery ends recorded as delivered.
        const deliveries = query<{ status: string; n: number }>(
          env,
          "SELECT status, count(*)::int AS n FROM webhook_outbox GROUP BY status"
        )
        yield* waitUntil(
          "every delivery is recorded delivered",
          Effect.map(deliveries, (rows) => rows.length === 1 && rows[0]!.status === "delivered"),
          30_000
        )
        expect(yield* deliveries).toEqual([{ status: "delivered", n: total }])
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "two API processes count one rate limit per client",
    () =>
      Effect.gen(function*() {
        const env = yield* postgres.env
        const apiA = yield* startServe(yield* tempDataDir, ["--no-worker", "--rate-limit", "10"], env)
        const apiB = yield* restartServe(yield* tempDataDir, ["--no-worker", "--rate-limit", "10"], env)
        const answers = yield* Effect.forEach(
          Array.from({ length: 12 }, (_, i) => i),
          (i) => json(`${(i % 2 === 0 ? apiA : apiB).baseUrl}/v1/apps`, { headers: { "x-api-key": apiA.key } })
        )
        expect(answers.map((a) => a.status)).toEqual([...Array(10).fill(200), 429, 429])
        expect(answers.slice(0, 10).map((a) => a.headers.get("ratelimit-remaining"))).toEqual(
          Array.from({ length: 10 }, (_, i) => String(9 - i))
        )
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "a worker that loses its database gives its run up when the lease cannot be renewed; another finishes it",
    () =>
      Effect.gen(function*() {
        const env = yield* postgres.env
        const url = new URL(env["APPEXEC_DATABASE_URL"]!)
        const proxy = yield* startProxy(Number(url.port))
        const behindProxy = new URL(url.href)
        behindProxy.port = String(proxy.port)
        const appsDir = yield* tempDataDir
        writeFileSync(join(appsDir, "slow.json"), JSON.stringify(slowApp("Four seconds", 4_000)))
        const api = yield* startServe(yield* tempDataDir, ["--no-worker", "--apps", appsDir], env)
        const lost = yield* startWorker({ ...env, APPEXEC_DATABASE_URL: behindProxy.href })
        const headers = { "x-api-key": api.key, "content-type": "application/json" }
        const app = (yield* json(`${api.baseUrl}/v1/apps`, { headers })).body.data[0]
        const started = yield* json(`${api.baseUrl}/v1/apps/${app.appId}/executions`, {
          method: "POST",
          headers,
          body: JSON.stringify({ inputs: { message: "survives" } })
        })
        const executionId: string = started.body.data.executionId
        yield* lost.waitFor(new RegExp(`execution ${executionId} running`), "stderr", "10 seconds")

        proxy.cut()
        const finisher = yield* startWorker(env)
        // It gives the run up: through its lease keeper when the cut finds the workflow under way,
        // or at once when the cut finds the run still reading it (the run then leaves the
        // execution to its lease's expiry).
        yield* lost.waitFor(
          /lease renewal failed and the lease runs out before the next try; stopping the run|storage failed; the lease will expire and it runs again/,
          "stderr",
          "10 seconds"
        )
        yield* finisher.waitFor(new RegExp(`execution ${executionId} completed`), "stderr", "20 seconds")
        const [row] = yield* query<{ status: string; outputs: string }>(
          env,
          "SELECT status, outputs FROM executions WHERE execution_id = $1",
          [executionId]
        )
        expect(row!.status).toBe("completed")
        expect(JSON.parse(row!.outputs)[0].value).toBe("survives")
        // The cut-off worker wrote nothing more: it never logged a completion.
        expect(logged(lost.output.stderr, "completed")).toEqual([])
        // It is still alive, waiting for its database to come back.
        expect(lost.child.exitCode).toBeNull()
      }).pipe(Effect.scoped),
    60_000
  )
})
