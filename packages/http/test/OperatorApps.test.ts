/**
 * The apps and what the workers run in the operator views of the admin app
 * (docs/operations.md#operator-views), over a real socket on 127.0.0.1: `GET /operator/apps`
 * lists each app with queued or running executions, with its limit, its node types and what its
 * queued ones wait for (a worker for node types no live worker runs, or the app's own limit);
 * `GET /operator/processes` shows the node types each process's worker runs (null: no worker).
 */
import { Appexec, ProcessRegistry } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { eventually, seed, serveOperator, slowApp } from "./fixtures.js"

const dataOf = <A>(url: string) =>
  Effect.promise(async () => ((await (await fetch(url)).json()) as { readonly data: A }).data)

/** This instance is `api-1`, whose worker runs inputs, outputs and utilities only (not `text.template`). */
const harness = TestHarness.layer({
  process: { name: "api-1", role: "serve", version: "0.1.0" },
  config: { workerConcurrency: 2, nodeTypes: ["input.*", "output.*", "util.*"] }
})

interface ListedApp {
  readonly appId: string
  readonly name: string | null
  readonly queued: number
  readonly running: number
  readonly concurrency: number | null
  readonly nodeTypes: ReadonlyArray<string>
  readonly waitingFor: string | null
}

describe("the apps in the operator views", () => {
  it.scoped("counts each app's queued and running executions, with its limit and what its queue waits for", () =>
    Effect.gen(function*() {
      const url = yield* serveOperator()
      const registry = yield* ProcessRegistry.ProcessRegistry
      const appexec = yield* Appexec.Appexec
      const { alice, echo } = yield* seed
      const slow = yield* appexec.apps.import({ ...slowApp, concurrency: 1 }, { owner: { public: true } })
      // An API process that runs no worker.
      yield* registry.beat(
        new ProcessRegistry.ProcessEntry({
          processId: "api-2#aaaaaa",
          name: "api-2",
          role: "api",
          version: "0.1.0",
          startedAt: 0,
          heartbeatAt: 0,
          expiresAt: 30_000,
          nodeTypes: null
        })
      )
      expect(yield* dataOf<Array<ListedApp>>(`${url}/operator/apps`)).toEqual([])

      // The worker reads the versions it may claim again a second later (`ClaimPlan.REFRESH_MS`).
      yield* TestClock.adjust(1_000)
      const principal = yield* appexec.keys.authenticate({ "x-api-key": alice.key })
      // Slow: one runs and one waits for it (its limit is 1, though the worker has two slots);
      // echo needs text.template, which no live worker runs.
      for (const prompt of ["runs", "waits"]) yield* appexec.executions.start(principal, slow.appId, { prompt })
      yield* appexec.executions.start(principal, echo.appId, { prompt: "stuck", style: "plain" })
      yield* eventually(
        "the slow run did not start",
        Effect.map(
          dataOf<Array<ListedApp>>(`${url}/operator/apps`),
          (apps) => apps.some((app) => app.appId === slow.appId && app.running === 1)
        )
      )

      const listed = yield* dataOf<Array<ListedApp>>(`${url}/operator/apps`)
      expect([...listed].sort((a, b) => (a.name ?? "").localeCompare(b.name ?? ""))).toEqual([
        {
          appId: echo.appId,
          name: "Echo",
          workspaceId: null,
          queued: 1,
          running: 0,
          concurrency: null,
          nodeTypes: ["input.options", "input.text", "input.url", "output.text", "text.template"],
          waitingFor: "a worker for text.template"
        },
        {
          appId: slow.appId,
          name: "Slow",
          workspaceId: null,
          queued: 1,
          running: 1,
          concurrency: 1,
          nodeTypes: ["input.text", "output.text", "util.delay"],
          waitingFor: "the app's limit of 1 at once"
        }
      ])
      expect(listed.map((app) => app.appId)).toEqual([echo.appId, slow.appId].sort())

      // What each process's worker runs: api-1 the installed types its patterns match, api-2 none.
      const processes = yield* dataOf<Array<{ name: string; nodeTypes: ReadonlyArray<string> | null }>>(
        `${url}/operator/processes`
      )
      const api1 = processes.find((p) => p.name === "api-1")!.nodeTypes!
      expect(api1).toEqual(expect.arrayContaining(["input.text", "output.text", "util.delay"]))
      expect(api1.every((type) => /^(input|output|util)\./.test(type))).toBe(true)
      expect(processes.find((p) => p.name === "api-2")!.nodeTypes).toBeNull()

      // A worker that runs text.template joins: echo's execution waits for nothing it names any more
      // (the live workers are read again after a second).
      yield* registry.beat(
        new ProcessRegistry.ProcessEntry({
          processId: "text-1#bbbbbb",
          name: "text-1",
          role: "worker",
          version: "0.1.0",
          startedAt: 0,
          heartbeatAt: 0,
          expiresAt: 60_000,
          nodeTypes: ["input.options", "input.text", "input.url", "output.text", "text.template"]
        })
      )
      yield* TestClock.adjust(1_000)
      const after = yield* dataOf<Array<ListedApp>>(`${url}/operator/apps`)
      expect(after.find((app) => app.appId === echo.appId)).toMatchObject({ queued: 1, waitingFor: null })
    }).pipe(Effect.provide(harness)))
})
