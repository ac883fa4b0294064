/**
 * The app read that every start makes is served from memory while no other connection has
 * committed (checked once per turn of the event loop): a change made through another connection
 * (another process on the same file) is seen from the next turn, one's own at once.
 */
import { Ids } from "@appexec/api"
import { AppStore, KeyStore } from "@appexec/core"
import { SqliteStorage } from "@appexec/sqlite"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"

const workspaceId = Ids.WorkspaceId.make("00000000-0000-4000-8000-000000000001")
const appId = Ids.AppId.make("00000000-0000-4000-8000-000000000002")
const workflowOf = (n: number) => Ids.WorkflowId.make(`00000000-0000-4000-8000-00000000010${n}`)

const record = (n: number, isPublic: boolean): AppStore.AppRecord => ({
  appId,
  name: "App",
  description: null,
  isPublic,
  workspaceId,
  workflowId: workflowOf(n),
  createdAt: 0,
  updatedAt: n
})
const versionOf = (app: AppStore.AppRecord): AppStore.WorkflowVersion => ({
  workflowId: app.workflowId,
  appId: app.appId,
  definition: { name: app.name, nodes: [], edges: [] },
  createdAt: app.updatedAt
})

/** Resumes in the next turn of the event loop, once this turn's `setImmediate` callbacks ran. */
const nextTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

const tempDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-sqlite-apps-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

describe("SqliteAppStore", () => {
  it.scoped("a change committed through another connection is read from the next turn, one's own at once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = join(dir, "appexec.db")
      // Two connections on one file, as two processes have.
      const first = yield* Layer.build(SqliteStorage.layer({ filename }))
      const second = yield* Layer.build(SqliteStorage.layer({ filename }))
      const appsOf = (context: typeof first) => Effect.provide(AppStore.AppStore, context)
      const here = yield* appsOf(first)
      const there = yield* appsOf(second)
      yield* Effect.flatMap(
        Effect.provide(KeyStore.KeyStore, first),
        (keys) => keys.ensureWorkspace({ workspaceId, name: "w", createdAt: 0 })
      )

      const v1 = record(1, true)
      yield* here.save(v1, versionOf(v1))
      expect(Option.getOrThrow(yield* here.get(appId))).toEqual(v1)
      // Read again: served as read, still the same.
      expect(Option.getOrThrow(yield* here.get(appId))).toEqual(v1)

      // Another connection makes it private, with a new version.
      const v2 = record(2, false)
      yield* there.save(v2, versionOf(v2))
      // This turn's check of the version is taken: the app as read before, until the turn ends.
      expect(Option.getOrThrow(yield* here.get(appId))).toEqual(v1)
      yield* nextTurn
      expect(Option.getOrThrow(yield* here.get(appId))).toEqual(v2)

      // A commit of the other connection that does not touch apps changes nothing read here.
      yield* Effect.flatMap(
        Effect.provide(KeyStore.KeyStore, second),
        (keys) =>
          keys.ensureWorkspace({
            workspaceId: Ids.WorkspaceId.make("00000000-0000-4000-8000-000000000003"),
            name: "x",
            createdAt: 0
          })
      )
      yield* nextTurn
      expect(Option.getOrThrow(yield* here.get(appId))).toEqual(v2)

      // This connection's own save is read at once (its commits do not move the version).
      const v3 = record(3, true)
      yield* here.save(v3, versionOf(v3))
      expect(Option.getOrThrow(yield* here.get(appId))).toEqual(v3)
      expect(Option.getOrThrow(yield* there.get(appId))).toEqual(v3)
    }))
})
