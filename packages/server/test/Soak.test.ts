/**
 * Soak: executions with webhooks run while `appexec serve` is killed with SIGKILL at random
 * moments, several times, and started again on the same data directory. In the end every
 * execution the server accepted (answered 202) has completed with its own output, and its
 * webhook has been delivered with that result. Claims are short (`--lease 1s`, webhook claims
 * 1.5 s) so that the work a killed process held is taken over within seconds, and an execution
 * may be claimed more often than it can be killed (`--max-attempts 10`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Random, Schedule } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { restartServe, startServe, tempDataDir } from "./support/ServeProcess.js"

const KILLS = 4

/** Starts one submitting lane makes per round at most. */
const PER_LANE = 15

const soakApp = {
  name: "Soak echo",
  public: true,
  nodes: [
    { id: "message", type: "input.text", label: "Message", config: { name: "message", required: true } },
    { id: "compose", type: "text.template", label: "Compose", config: { template: "echo {{message}}" } },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms: 150 } },
    { id: "reply", type: "output.text", label: "Reply" }
  ],
  edges: [
    { source: "message", target: "compose" },
    { source: "compose", target: "wait" },
    { source: "wait", target: "reply" }
  ]
}

interface Delivered {
  readonly status: string
  readonly reply: string | null
}

/** A receiver that answers 200 and keeps the last webhook of each execution. */
const receiver = Effect.acquireRelease(
  Effect.async<{ readonly url: string; readonly got: Map<string, Delivered>; readonly close: () => void }>(
    (resume) => {
      const got = new Map<string, Delivered>()
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          const { data } = JSON.parse(Buffer.concat(chunks).toString()) as {
            data: { executionId: string; status: string; outputs: Array<{ value: string | null }> }
          }
          got.set(data.executionId, { status: data.status, reply: data.outputs[0]?.value ?? null })
          res.writeHead(200).end()
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
          got,
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        })))
    }
  ),
  (r) => Effect.sync(r.close)
)

const tempAppsDir = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "appexec-soak-apps-"))
    writeFileSync(join(dir, "soak.json"), JSON.stringify(soakApp))
    return dir
  }),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const fetchJson = (url: string, key: string, init: RequestInit = {}) =>
  Effect.tryPromise(async () => {
    const response = await fetch(url, { ...init, headers: { "x-api-key": key, "content-type": "application/json" } })
    return { status: response.status, body: await response.json() as { data: Record<string, unknown> } }
  })

describe("soak", () => {
  it.scopedLive(
    `every accepted execution completes with its own output and its webhook arrives, across ${KILLS} SIGKILLs`,
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const appsDir = yield* tempAppsDir
        const hooks = yield* receiver
        const args = [
          "--apps",
          appsDir,
          "--allow-private-networks",
          "--rate-limit",
          "1000000",
          "--lease",
          "1s",
          "--max-attempts",
          "10",
          "--webhook-timeout",
          "1s",
          "--webhook-claim-margin",
          "500ms",
          "--webhook-retry-delays",
          "200ms,200ms,500ms,1s,1s"
        ]
        const first = yield* startServe(dataDir, args)
        const key = first.key
        const apps = yield* fetchJson(`${first.baseUrl}/v1/apps`, key)
        const appId = (apps.body.data as unknown as Array<{ appId: string }>)[0]!.appId
        /** executionId → the message it was started with. */
        const accepted = new Map<string, string>()
        let sent = 0

        /**
         * Starts up to `PER_LANE` executions one after another on `baseUrl`, then idles until
         * interrupted; errors (the kill) are ignored. The bound keeps the work the last process
         * must finish within what the test can wait for, however fast starts are answered.
         */
        const submitter = (baseUrl: string, round: number, lane: number) =>
          Effect.gen(function*() {
            const message = `r${round}-l${lane}-${sent++}`
            const started = yield* fetchJson(
              `${baseUrl}/v1/apps/${appId}/executions?webhook=${encodeURIComponent(hooks.url)}`,
              key,
              { method: "POST", body: JSON.stringify({ inputs: { message } }) }
            ).pipe(Effect.either)
            if (started._tag === "Right" && started.right.status === 202) {
              accepted.set(String(started.right.body.data.executionId), message)
            }
          }).pipe(Effect.repeatN(PER_LANE - 1), Effect.zipRight(Effect.never))

        let serve: Omit<typeof first, "key"> = first
        for (let round = 0; round <= KILLS; round++) {
          if (round > 0) serve = yield* restartServe(dataDir, args)
          if (round === KILLS) break
          const lanes = yield* Effect.forEach(
            [0, 1, 2, 3],
            (lane) => Effect.fork(submitter(serve.baseUrl, round, lane))
          )
          // A random moment: while executions are queued, running and being delivered.
          yield* Effect.sleep(yield* Random.nextIntBetween(300, 1_500))
          serve.child.kill("SIGKILL")
          expect((yield* serve.exited("10 seconds")).signal).toBe("SIGKILL")
          yield* Fiber.interruptAll(lanes)
        }
        expect(accepted.size).toBeGreaterThan(20)

        // The last process finishes what every killed one left.
        const unfinished = () =>
          Effect.forEach([...accepted], ([executionId, message]) =>
            fetchJson(`${serve.baseUrl}/v1/executions/${executionId}`, key).pipe(
              Effect.map(({ body }) => {
                const data = body.data as { status: string; outputs: Array<{ value: string | null }> }
                const delivered = hooks.got.get(executionId)
                const done = data.status === "completed" && data.outputs[0]?.value === `echo ${message}` &&
                  delivered?.status === "completed" && delivered.reply === `echo ${message}`
                return done ? [] : [{ executionId, status: data.status, delivered }]
              })
            ), { concurrency: 8 }).pipe(Effect.map((lists) =>
              lists.flat()
            ))
        yield* unfinished().pipe(
          Effect.filterOrFail((left) =>
            left.length === 0
          ),
          Effect.retry(Schedule.spaced("250 millis").pipe(Schedule.upTo("30 seconds"))),
          Effect.ignore
        )
        expect(yield* unfinished()).toEqual([])
        expect(serve.output.stderr).not.toMatch(/SQLITE_CORRUPT|malformed/)
      }),
    90_000
  )
})
