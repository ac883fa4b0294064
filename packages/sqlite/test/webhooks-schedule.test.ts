import { Ids } from "@appexec/api"
import { Appexec, AppexecLayer, OutboundHttp, WebhookOutbox } from "@appexec/core"
import { SqliteStorage } from "@appexec/sqlite"
import { SeededIds, TestApps, TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Layer, TestClock } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const echo = TestApps.echo

describe("webhook schedule over SQLite (shortened delays, virtual time)", () => {
  it.scoped("attempts at once and after each configured delay, each recorded in the database", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-webhooks-"))),
        (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true }))
      )
      const sent: Array<number> = []
      const http = Layer.succeed(OutboundHttp.OutboundHttp, {
        request: () =>
          Effect.map(Clock.currentTimeMillis, (at) => {
            sent.push(at)
            return { status: sent.length < 3 ? 500 : 200, headers: {}, body: new Uint8Array() }
          })
      })
      const instance = AppexecLayer.make({
        config: { pollInterval: 60_000, webhookPollInterval: 100, webhookRetryDelays: [200, 500, 1_000] }
      }).pipe(
        Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "appexec.db") })),
        Layer.provideMerge(SeededIds.layer()),
        Layer.provide(http)
      )

      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const app = yield* appexec.apps.import(echo)
        const principal = yield* TestHarness.signIn()
        const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" }, {
          webhook: "https://hooks.example/x"
        })
        const waiting = yield* Effect.fork(appexec.executions.await(started.executionId))
        yield* TestClock.adjust(0)
        yield* Fiber.join(waiting)
        yield* TestClock.adjust("10 seconds")
        expect(sent).toEqual([0, 200, 700])
        const outbox = yield* WebhookOutbox.WebhookOutbox
        const [entry] = yield* outbox.forExecution(Ids.ExecutionId.make(started.executionId))
        expect(entry!.status).toBe("delivered")
        expect(entry!.attempts.map((a) => [a.at, a.statusCode])).toEqual([
          [0, 500],
          [200, 500],
          [700, 200]
        ])
      }).pipe(Effect.provide(instance))
    }))
})
