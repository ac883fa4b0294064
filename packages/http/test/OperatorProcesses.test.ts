/**
 * The fleet in the operator views of the admin app (docs/operations.md#the-fleet), over a real
 * socket on 127.0.0.1: `GET /operator/processes` lists every process of the registry with its
 * role, version, start, last heartbeat, whether it is live and how many executions it runs, idle
 * ones too; `GET /operator/executions/{id}` names the process running an execution, which the
 * API's own answer never does.
 */
import { Appexec, ProcessRegistry } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { eventually, seed, serveOperator, slowApp } from "./fixtures.js"

const call = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { status: response.status, body: await response.json() as { readonly data: unknown } }
  })

/** This instance is `api-1`, with one worker slot; two more processes are in the registry. */
const harness = TestHarness.layer({
  process: { name: "api-1", role: "serve", version: "0.1.0" },
  config: { workerConcurrency: 1 }
})

interface Listed {
  readonly processId: string
  readonly name: string
  readonly role: string
  readonly version: string
  readonly startedAt: string
  readonly lastHeartbeatAt: string
  readonly live: boolean
  readonly running: number
  readonly nodeTypes: ReadonlyArray<string> | null
}

describe("the fleet in the operator views", () => {
  it.scoped("lists every process, idle and lost ones too, and names the one running an execution", () =>
    Effect.gen(function*() {
      const url = yield* serveOperator()
      const registry = yield* ProcessRegistry.ProcessRegistry
      const { alice } = yield* seed
      const appexec = yield* Appexec.Appexec
      const slow = yield* appexec.apps.import(slowApp, { owner: { public: true } })
      // An idle worker that beat just now, and one that died an hour ago (its row not pruned yet).
      yield* registry.beat(
        new ProcessRegistry.ProcessEntry({
          processId: "worker-b#bbbbbb",
          name: "worker-b",
          role: "worker",
          version: "0.1.0",
          startedAt: 0,
          heartbeatAt: 0,
          expiresAt: 3_000
        })
      )
      yield* registry.beat(
        new ProcessRegistry.ProcessEntry({
          processId: "worker-c#cccccc",
          name: "worker-c",
          role: "worker",
          version: "0.0.9",
          startedAt: -7_200_000,
          heartbeatAt: -3_600_000,
          expiresAt: -3_597_000
        })
      )
      const principal = yield* appexec.keys.authenticate({ "x-api-key": alice.key })
      const running = (yield* appexec.executions.start(principal, slow.appId, { prompt: "runs" })).executionId
      const waiting = (yield* appexec.executions.start(principal, slow.appId, { prompt: "waits" })).executionId
      yield* eventually(
        "the slow run did not start",
        Effect.map(
          call(`${url}/operator/processes`),
          (answer) => (answer.body.data as Array<Listed>).some((p) => p.name === "api-1" && p.running === 1)
        )
      )

      const listed = (yield* call(`${url}/operator/processes`)).body.data as Array<Listed>
      expect(listed).toEqual([
        {
          processId: expect.stringMatching(/^api-1#[0-9a-f]{6}$/),
          name: "api-1",
          role: "serve",
          version: "0.1.0",
          startedAt: "1970-01-01T00:00:00.000Z",
          lastHeartbeatAt: "1970-01-01T00:00:00.000Z",
          live: true,
          running: 1,
          // Its worker runs every installed type (no --node-types).
          nodeTypes: expect.arrayContaining(["input.text", "output.text", "util.delay"])
        },
        {
          processId: "worker-b#bbbbbb",
          name: "worker-b",
          role: "worker",
          version: "0.1.0",
          startedAt: "1970-01-01T00:00:00.000Z",
          lastHeartbeatAt: "1970-01-01T00:00:00.000Z",
          live: true,
          running: 0,
          // Its row says nothing of what it runs.
          nodeTypes: null
        },
        expect.objectContaining({
          name: "worker-c",
          live: false,
          running: 0,
          lastHeartbeatAt: "1969-12-31T23:00:00.000Z"
        })
      ])

      // The execution's detail names its process; a queued one has none; the API's answer never does.
      const detail = yield* call(`${url}/operator/executions/${running}`)
      expect(detail.status).toBe(200)
      expect(detail.body.data).toMatchObject({
        executionId: running,
        status: "running",
        attempt: 1,
        worker: { processId: listed[0]!.processId, name: "api-1" }
      })
      expect((yield* call(`${url}/operator/executions/${waiting}`)).body.data).toMatchObject({
        status: "queued",
        worker: null
      })
      expect(JSON.parse(yield* appexec.executions.getJson(principal, running))).not.toHaveProperty("data.worker")
      expect((yield* call(`${url}/operator/executions/${crypto.randomUUID()}`)).status).toBe(404)
      expect((yield* call(`${url}/operator/executions/not-an-id`)).status).toBe(404)
    }).pipe(Effect.provide(harness)))
})
