/**
 * Part 3 of the live executions benchmark (`live.ts`): the store writes of one execution whose node
 * reports progress every 100 ms for 10 minutes of virtual time (`TestClock`), in this process on a
 * SQLite file, counting the `ExecutionReports.append` calls.
 */
import { Appexec, AppexecLayer, ExecutionReports, ExecutionStore, IdGenerator, NodeType } from "@appexec/core"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { SqliteStorage } from "@appexec/sqlite"
import { Effect, Layer, Option, Schema, TestClock, TestContext } from "effect"
import { join } from "node:path"
import * as TempDir from "./TempDir.js"

/** Virtual time of the dense-progress execution, and its progress period. */
const DENSE_MS = 10 * 60_000
const DENSE_EVERY_MS = 100

/** Reports its progress every `DENSE_EVERY_MS` for `DENSE_MS`, then passes its input on. */
const dense = NodeType.defineNode({
  type: "bench.dense_progress",
  description: "Reports its progress every 100 ms for 10 minutes.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({}),
  run: ({ progress, upstream }) => {
    const ticks = DENSE_MS / DENSE_EVERY_MS
    return Effect.as(
      Effect.forEach(
        Array.from({ length: ticks }, (_, i) => i + 1),
        (i) => Effect.zipRight(Effect.sleep(DENSE_EVERY_MS), progress(i / ticks)),
        { discard: true }
      ),
      upstream[0]!.value
    )
  }
})

const denseApp = {
  name: "Dense progress",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "work", type: "bench.dense_progress", label: "Work", config: {} },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [{ source: "prompt", target: "work" }, { source: "work", target: "out" }]
}

/** `ExecutionReports` of the layer below, counting the calls of `append` in `writes`. */
const counted = (writes: { count: number }) =>
  Layer.effect(
    ExecutionReports.ExecutionReports,
    Effect.map(ExecutionReports.ExecutionReports, (reports) => ({
      ...reports,
      append: (executionId, stored) =>
        Effect.zipRight(
          Effect.sync(() => {
            writes.count += 1
          }),
          reports.append(executionId, stored)
        )
    }))
  )

/** 3: the store writes of one execution that reports progress every 100 ms for 10 virtual minutes. */
export const denseWrites = Effect.scoped(
  Effect.gen(function*() {
    const dir = yield* TempDir.make("live-dense")
    const writes = { count: 0 }
    const instance = AppexecLayer.make({
      nodes: [dense],
      webhooks: false,
      config: { defaultTimeout: "1 hour", drainTimeout: 0 }
    }).pipe(
      Layer.provideMerge(
        counted(writes).pipe(Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "a.db") })))
      ),
      Layer.provide(IdGenerator.IdGenerator.random),
      Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: false }))
    )
    return yield* Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const store = yield* ExecutionStore.ExecutionStore
      const app = yield* appexec.apps.import(denseApp, { owner: { public: true } })
      const { key } = yield* appexec.keys.create({ workspace: "bench" })
      const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "go" })
      for (let second = 0; second < DENSE_MS / 1000 + 60; second++) {
        yield* TestClock.adjust("1 second")
        const record = yield* store.get(started.executionId)
        if (Option.isSome(record) && record.value.completedAt !== null) {
          if (record.value.status !== "completed") {
            return yield* Effect.fail(new Error(`the dense execution ended ${record.value.status}`))
          }
          return { writes: writes.count, ms: record.value.completedAt - (record.value.startedAt ?? 0) }
        }
      }
      return yield* Effect.fail(new Error("the dense execution did not end"))
    }).pipe(Effect.provide(instance))
  }).pipe(Effect.provide(TestContext.TestContext))
)
