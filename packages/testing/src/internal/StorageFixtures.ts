/**
 * Records for the contract suites: deterministic ids, and an owner (workspace, user, app,
 * workflow version) seeded through the ports, since adapters may check references.
 */
import { Ids } from "@appexec/api"
import {
  type AppexecLayer,
  AppStore,
  ExecutionQueue,
  type ExecutionRecord,
  ExecutionStore,
  KeyStore,
  WebhookOutbox
} from "@appexec/core"
import { describe, it } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"

/** The lease the contract suites claim with, unless one says otherwise. */
export const LEASE = 30_000

/** A fixed UUID numbered `n` within `space` (0–15). */
export const uuid = (space: number, n: number) =>
  `00000000-0000-4000-8${space.toString(16)}00-${n.toString(16).padStart(12, "0")}`

/** The ids of a seeded owner. */
export interface Owner {
  readonly workspaceId: Ids.WorkspaceId
  readonly userId: Ids.UserId
  readonly appId: Ids.AppId
  readonly workflowId: Ids.WorkflowId
}

/** Seeds workspace `n` with a user, an app and its workflow version. */
export const seedOwner = (n = 1) =>
  Effect.gen(function*() {
    const keys = yield* KeyStore.KeyStore
    const apps = yield* AppStore.AppStore
    const owner: Owner = {
      workspaceId: Ids.WorkspaceId.make(uuid(1, n)),
      userId: Ids.UserId.make(uuid(2, n)),
      appId: Ids.AppId.make(uuid(3, n)),
      workflowId: Ids.WorkflowId.make(uuid(4, n))
    }
    yield* keys.ensureWorkspace({ workspaceId: owner.workspaceId, name: `workspace ${n}`, createdAt: 0 })
    yield* keys.ensureUser({ userId: owner.userId, workspaceId: owner.workspaceId, name: "user", createdAt: 0 })
    yield* apps.save(
      {
        appId: owner.appId,
        name: `app ${n}`,
        description: null,
        isPublic: false,
        workspaceId: owner.workspaceId,
        workflowId: owner.workflowId,
        createdAt: 0,
        updatedAt: 0
      },
      {
        workflowId: owner.workflowId,
        appId: owner.appId,
        definition: { name: "owner", nodes: [], edges: [] },
        createdAt: 0
      }
    )
    return owner
  })

/** `record` as storage reads it once a worker has claimed it `attempt` times (`ExecutionRecord.attempt`). */
export const attempted = (
  record: ExecutionRecord.ExecutionRecord,
  attempt: number
): ExecutionRecord.ExecutionRecord => ({
  ...record,
  attempt
})

/** A queued execution numbered `n` of `owner`. */
export const queued = (owner: Owner, n: number, createdAt = n): ExecutionRecord.ExecutionRecord => ({
  executionId: Ids.ExecutionId.make(uuid(5, n)),
  workflowId: owner.workflowId,
  appId: owner.appId,
  workspaceId: owner.workspaceId,
  userId: owner.userId,
  status: "queued",
  inputs: { prompt: `prompt ${n}`, "ünïcode key": "välue ✓" },
  outputs: [{ id: "out", label: "Out", type: "pending", value: null, status: "pending", error: null }],
  errorMessage: null,
  webhookUrl: `https://example.com/hook/${n}`,
  createdAt,
  startedAt: null,
  completedAt: null
})

/** The record after it started at `at`. */
export const started = (record: ExecutionRecord.ExecutionRecord, at: number): ExecutionRecord.ExecutionRecord => ({
  ...record,
  status: "running",
  startedAt: at
})

/** The record after it completed at `at` with one text output. */
export const completed = (record: ExecutionRecord.ExecutionRecord, at: number): ExecutionRecord.ExecutionRecord => ({
  ...record,
  status: "completed",
  startedAt: record.startedAt ?? at,
  completedAt: at,
  outputs: [{
    id: "out",
    label: "Out",
    type: "text",
    value: `done ${record.executionId}`,
    status: "completed",
    error: null
  }]
})

/** A pending webhook delivery for `record`, numbered `n`. */
export const delivery = (
  record: ExecutionRecord.ExecutionRecord,
  n: number,
  at: number
): WebhookOutbox.OutboxEntry => ({
  deliveryId: WebhookOutbox.DeliveryId.make(uuid(6, n)),
  executionId: record.executionId,
  userId: record.userId,
  url: record.webhookUrl ?? "https://example.com/hook",
  status: "pending",
  nextAttemptAt: at,
  attempts: [],
  createdAt: at
})

/** Claims the next execution, failing the test when there is none. */
export const claimSome = (workerId: string, leaseMs: number) =>
  Effect.flatMap(ExecutionQueue.ExecutionQueue, (queue) => ExecutionQueue.claimOne(queue, workerId, leaseMs)).pipe(
    Effect.flatMap(
      Option.match({
        onNone: () => Effect.dieMessage("expected a claimable execution"),
        onSome: Effect.succeed
      })
    )
  )

/** Inserts `record`, claims it and saves it completed with a webhook delivery numbered `n`. */
export const completeWithWebhook = (record: ExecutionRecord.ExecutionRecord, n: number, at: number) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore.ExecutionStore
    yield* store.insert(record)
    const claim = yield* claimSome("worker-webhook", LEASE)
    const entry = delivery(claim.execution, n, at)
    yield* store.save(completed(claim.execution, at), claim.lease, entry)
    return entry
  })

/** Builds fresh, empty storage providing every port; each test builds its own. */
export type MakeStorage = () => Layer.Layer<AppexecLayer.Storage, unknown>

/** A test of a contract suite: `body` runs on fresh storage, under the test clock (within `timeout` ms, if given). */
export const storageTest =
  (makeStorage: MakeStorage) =>
  (title: string, body: Effect.Effect<void, unknown, AppexecLayer.Storage>, timeout?: number) =>
    it.effect(title, () => Effect.provide(body, makeStorage()), timeout)

/** The test function a contract suite declares its tests with. */
export type StorageTest = ReturnType<typeof storageTest>

/**
 * A contract suite titled `title`: `tests` declares its tests with the `test` it is given; the suite
 * is then called once per adapter, each test on fresh storage from that adapter's `makeStorage`.
 */
export const contract =
  (title: string, tests: (test: StorageTest) => void) => (name: string, makeStorage: MakeStorage) =>
    describe(`${title}: ${name}`, () => tests(storageTest(makeStorage)))

const portsOf = {
  store: ExecutionStore.ExecutionStore,
  queue: ExecutionQueue.ExecutionQueue,
  outbox: WebhookOutbox.WebhookOutbox
}

/** The execution storage's ports, as most contract tests take them. */
export const ports = Effect.all(portsOf)

/** Workspace 1's owner, seeded, with the execution storage's ports: how most contract tests begin. */
export const seeded = Effect.all({ owner: seedOwner(), ...portsOf })
