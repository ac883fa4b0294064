/**
 * A start's `priority` over a real socket (docs/scaling.md#priorities): kept on the execution,
 * 0 when not given; anything but an integer from -10 to 10, or a priority above the workspace's
 * highest (`appexec workspaces set NAME --max-priority N`), is a 400 in the API's error shape;
 * an `Idempotency-Key` names the priority with the rest of the request.
 */
import { Ids } from "@appexec/api"
import { Appexec, ExecutionStore } from "@appexec/core"
import { HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { errorOf, seed, send, stack } from "./fixtures.js"

const start = (appId: string, key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  send(
    HttpClientRequest.post(`/v1/apps/${appId}/executions`).pipe(
      HttpClientRequest.setHeaders({ "x-api-key": key, ...headers }),
      HttpClientRequest.bodyText(JSON.stringify(body), "application/json")
    )
  )

const idOf = (body: unknown) => Ids.ExecutionId.make((body as { data: { executionId: string } }).data.executionId)

/** The priority stored with the execution of a 202 answer (absent: 0). */
const storedPriority = (body: unknown) =>
  Effect.flatMap(ExecutionStore.ExecutionStore, (store) => store.get(idOf(body))).pipe(
    Effect.map((found) => Option.getOrThrow(found).priority)
  )

describe("priority on start", () => {
  it.scoped("is kept on the execution; none is 0; a value that is not an integer from -10 to 10 is a 400", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const inputs = { prompt: "hi" }
      for (const priority of [10, -10, 3]) {
        const started = yield* start(echo.appId, alice.key, { inputs, priority })
        expect(started.status).toBe(202)
        expect(yield* storedPriority(started.body)).toBe(priority)
      }
      const plain = yield* start(echo.appId, alice.key, { inputs })
      expect(plain.status).toBe(202)
      expect(yield* storedPriority(plain.body)).toBeUndefined()
      expect(yield* storedPriority((yield* start(echo.appId, alice.key, { inputs, priority: 0 })).body))
        .toBeUndefined()

      for (const priority of [11, -11, 1.5, "2", null, true, [1], 1e300]) {
        const refused = yield* start(echo.appId, alice.key, { inputs, priority })
        expect(refused.status, JSON.stringify(priority)).toBe(400)
        expect(errorOf(refused.body)).toEqual({
          code: "invalid_request",
          message: "`priority` must be an integer from -10 to 10 (default 0)."
        })
      }
    }).pipe(Effect.provide(stack())))

  it.scoped("above the workspace's highest priority is a 400 naming it; other workspaces keep 10", () =>
    Effect.gen(function*() {
      const { alice, bob, echo } = yield* seed
      const appexec = yield* Appexec.Appexec
      yield* appexec.workspaces.set("alice", { maxPriority: 3 })
      const inputs = { prompt: "hi" }
      const refused = yield* start(echo.appId, alice.key, { inputs, priority: 4 })
      expect(refused.status).toBe(400)
      expect(errorOf(refused.body)).toEqual({
        code: "invalid_request",
        message: "`priority` 4 is above 3, the highest this workspace may start at."
      })
      for (const priority of [3, 0, -10]) {
        expect((yield* start(echo.appId, alice.key, { inputs, priority })).status).toBe(202)
      }
      expect((yield* start(echo.appId, bob.key, { inputs, priority: 10 })).status).toBe(202)

      // Back to the default: 10 again.
      yield* appexec.workspaces.set("alice", { maxPriority: null })
      expect((yield* start(echo.appId, alice.key, { inputs, priority: 10 })).status).toBe(202)
    }).pipe(Effect.provide(stack())))

  it.scoped("an Idempotency-Key replays the same priority and refuses another", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const inputs = { prompt: "hi" }
      const key = { "idempotency-key": "urgent-1" }
      const first = yield* start(echo.appId, alice.key, { inputs, priority: 2 }, key)
      expect(first.status).toBe(202)
      const again = yield* start(echo.appId, alice.key, { inputs, priority: 2 }, key)
      expect(again.status).toBe(202)
      expect(idOf(again.body)).toBe(idOf(first.body))
      for (const other of [{ inputs, priority: 3 }, { inputs }]) {
        const reused = yield* start(echo.appId, alice.key, other, key)
        expect(reused.status).toBe(409)
        expect(errorOf(reused.body).code).toBe("idempotency_key_reused")
      }
      // 0 is the default: a start at priority 0 is the same request as one without a priority.
      const plain = { "idempotency-key": "plain-1" }
      const withoutPriority = yield* start(echo.appId, alice.key, { inputs }, plain)
      const atZero = yield* start(echo.appId, alice.key, { inputs, priority: 0 }, plain)
      expect(atZero.status).toBe(202)
      expect(idOf(atZero.body)).toBe(idOf(withoutPriority.body))
    }).pipe(Effect.provide(stack())))
})
