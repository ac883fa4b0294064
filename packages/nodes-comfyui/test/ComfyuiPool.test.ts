/**
 * The pool's health in virtual time, over a scripted network (each host answers `GET /queue` or
 * refuses the connection, as the test says): a server marked down is skipped by `acquire` while
 * another serves, is probed 1 s after it went down and then after 2, 4, 8, 16 and every 30 s, is
 * back in the pool at the first probe it answers, and no probe runs once every server is up; the
 * log says once that it left and once that it came back, never with the URL's credentials; with
 * every server down, `acquire` waits for the first to come back. And what marks a server down
 * (`ComfyApi.Server.down`): no answer, or a 5xx to `/prompt` or `/queue`; nothing else.
 */
import { OutboundHttp } from "@appexec/core"
import { ComfyuiPool } from "@appexec/nodes-comfyui"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Logger, Option, TestClock } from "effect"
import * as ComfyApi from "../src/internal/ComfyApi.js"

const A = "http://operator:hunter2@gpu-a:8188"
const B = "http://gpu-b:8188"
const origin = (url: string) => new URL(url).origin

/** A network where the origins in `up` answer `GET /queue` with an empty queue and the others refuse; every request's origin in `asked`. */
const network = (up: Set<string>, asked: Array<string>) =>
  Layer.succeed(OutboundHttp.OutboundHttp, {
    request: (request) =>
      Effect.suspend(() => {
        asked.push(origin(request.url))
        return up.has(origin(request.url))
          ? Effect.succeed({
            status: 200,
            headers: { "content-type": "application/json" },
            body: new TextEncoder().encode(`{"queue_running":[],"queue_pending":[]}`)
          })
          : Effect.fail(
            new OutboundHttp.OutboundError({
              reason: "network",
              message: "the connection was refused",
              detail: "ECONNREFUSED",
              unsent: true
            })
          )
      })
  })

/** The pool of `A` and `B` on `network`. */
const poolOf = (up: Set<string>, asked: Array<string>) =>
  ComfyuiPool.make([A, B]).pipe(Effect.provide(network(up, asked)))

/** Runs `body` with its log lines (`LEVEL message`) collected in the array it is given. */
const withLog = <A, E, R>(body: (lines: Array<string>) => Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const lines: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) =>
      void lines.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
    )
    return body(lines).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
  })

const acquired = (pool: ComfyuiPool.ComfyuiPool["Type"], executionId: string) =>
  Effect.scoped(pool.acquire(executionId))

describe("ComfyuiPool health", () => {
  it.scoped("a down server is skipped, probed with backoff, and back in the pool when it answers", () =>
    withLog((lines) =>
      Effect.gen(function*() {
        const up = new Set([origin(B)])
        const asked: Array<string> = []
        const pool = yield* poolOf(up, asked)
        expect(yield* acquired(pool, "e1")).toBe(A)

        yield* pool.markDown(A, "the ComfyUI server gpu-a:8188 did not answer")
        yield* pool.markDown(A, "again")
        expect(yield* acquired(pool, "e2")).toBe(B)
        expect([...(yield* pool.down).entries()]).toEqual([[A, {
          since: 0,
          error: "the ComfyUI server gpu-a:8188 did not answer"
        }]])

        // Probes 1 s after it went down, then 2, 4, 8, 16, 30 and 30 s apart.
        const probesAt: Array<number> = []
        for (let second = 1; second <= 91; second++) {
          const before = asked.length
          yield* TestClock.adjust("1 second")
          if (second === 90) up.add(origin(A))
          if (asked.length > before) probesAt.push(second)
        }
        expect(probesAt).toEqual([1, 3, 7, 15, 31, 61, 91])
        expect(asked.every((o) => o === origin(A))).toBe(true)
        expect((yield* pool.down).size).toBe(0)
        expect(yield* acquired(pool, "e3")).toBe(A)

        // Every server up: nothing probes.
        yield* TestClock.adjust("10 minutes")
        expect(asked.length).toBe(probesAt.length)

        expect(lines.filter((l) => l.startsWith("WARN"))).toEqual([
          "WARN ComfyUI server http://gpu-a:8188 is unreachable (the ComfyUI server gpu-a:8188 did not answer): left out of the pool until it answers"
        ])
        expect(lines.filter((l) => l.startsWith("INFO"))).toEqual([
          "INFO ComfyUI server http://gpu-a:8188 answers again (unreachable since 1970-01-01T00:00:00.000Z): back in the pool"
        ])
        expect(lines.join("\n")).not.toContain("hunter2")
      })
    ))

  it.scoped("every server down: acquire waits, and takes the first to come back; hold does not wait", () =>
    withLog(() =>
      Effect.gen(function*() {
        const up = new Set<string>()
        const pool = yield* poolOf(up, [])
        yield* pool.markDown(A, "no answer")
        yield* pool.markDown(B, "no answer")
        // A run re-attaching to its prompt on a down server still holds that server.
        yield* Effect.scoped(pool.hold(A, "e0"))
        const waiting = yield* Effect.fork(acquired(pool, "e1"))
        yield* TestClock.adjust("1 second")
        expect(Option.isNone(yield* Fiber.poll(waiting))).toBe(true)
        up.add(origin(B))
        yield* TestClock.adjust("2 seconds")
        expect(yield* Fiber.join(waiting)).toBe(B)
        expect([...(yield* pool.down).keys()]).toEqual([A])
      })
    ))

  it.scoped("a server that answers a run's request is back at once, its probe stopped", () =>
    withLog((lines) =>
      Effect.gen(function*() {
        const asked: Array<string> = []
        const pool = yield* poolOf(new Set(), asked)
        yield* pool.markDown(A, "no answer")
        yield* pool.markUp(A)
        expect((yield* pool.down).size).toBe(0)
        yield* TestClock.adjust("1 minute")
        expect(asked).toEqual([])
        expect(lines.filter((l) => l.startsWith("INFO")).length).toBe(1)
      })
    ))
})

describe("what marks a server down", () => {
  /** A network that answers every request with `status`, or fails it for `reason`. */
  const answering = (answer: number | OutboundHttp.OutboundFailure) =>
    Layer.succeed(OutboundHttp.OutboundHttp, {
      request: () =>
        typeof answer === "number"
          ? Effect.succeed({
            status: answer,
            headers: { "content-type": "application/json" },
            body: new TextEncoder().encode(`{"error":{"message":"bad","details":""},"node_errors":{}}`)
          })
          : Effect.fail(new OutboundHttp.OutboundError({ reason: answer, message: answer, detail: answer }))
    })

  /** The reasons `call` gave `down` on a network that answers `answer`. */
  const downOn = (
    answer: number | OutboundHttp.OutboundFailure,
    call: (server: ComfyApi.Server) => Effect.Effect<unknown, unknown, OutboundHttp.OutboundHttp>
  ) =>
    Effect.gen(function*() {
      const reasons: Array<string> = []
      const server: ComfyApi.Server = {
        url: B,
        timeout: "1 second",
        headers: {},
        down: (error) => Effect.sync(() => void reasons.push(error))
      }
      yield* Effect.either(call(server)).pipe(Effect.provide(answering(answer)))
      return reasons
    })

  it.effect("no answer (refused, reset, not found, timeout) or a 5xx to /prompt or /queue; nothing else", () =>
    Effect.gen(function*() {
      const submit = (server: ComfyApi.Server) => ComfyApi.submit(server, {}, "client", "id")
      const view = (server: ComfyApi.Server) =>
        ComfyApi.view(server, { filename: "a.png", subfolder: "", type: "output" }, 1000)
      for (const reason of ["network", "dns", "timeout"] as const) {
        expect(yield* downOn(reason, view)).toEqual([`the ComfyUI server gpu-b:8188 did not answer: ${reason}`])
      }
      expect(yield* downOn("address_not_allowed", view)).toEqual([])
      expect(yield* downOn("too_large", view)).toEqual([])
      expect(yield* downOn(503, submit)).toEqual(["the ComfyUI server gpu-b:8188 answered 503"])
      expect(yield* downOn(502, (server) => ComfyApi.deleteQueued(server, "id"))).toEqual([
        "the ComfyUI server gpu-b:8188 answered 502"
      ])
      // A refusal of the workflow, or a 5xx to another path, is an answer.
      expect(yield* downOn(400, submit)).toEqual([])
      expect(yield* downOn(500, view)).toEqual([])
    }))
})
