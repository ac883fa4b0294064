/**
 * Contract of `AppStore`: apps are replaced by id, versions are immutable, listings group a
 * workspace's own apps before public ones, order by name then id, search and limit.
 */
import { Ids } from "@appexec/api"
import { type AppDefinition, AppStore, KeyStore } from "@appexec/core"
import { describe, expect } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type MakeStorage, storageTest, uuid } from "../internal/StorageFixtures.js"

const WS1 = Ids.WorkspaceId.make(uuid(1, 1))
const WS2 = Ids.WorkspaceId.make(uuid(1, 2))

const app = (
  n: number,
  name: string,
  owner: { workspaceId: Ids.WorkspaceId | null; isPublic: boolean },
  description: string | null = null
): AppStore.AppRecord => ({
  appId: Ids.AppId.make(uuid(3, n)),
  name,
  description,
  isPublic: owner.isPublic,
  workspaceId: owner.workspaceId,
  workflowId: Ids.WorkflowId.make(uuid(4, n)),
  createdAt: n,
  updatedAt: n
})
const version = (
  record: AppStore.AppRecord,
  definition: AppDefinition.AppDefinition = { name: record.name, nodes: [], edges: [] }
): AppStore.WorkflowVersion => ({
  workflowId: record.workflowId,
  appId: record.appId,
  definition,
  createdAt: record.createdAt
})

const seedWorkspaces = Effect.gen(function*() {
  const keys = yield* KeyStore.KeyStore
  yield* keys.ensureWorkspace({ workspaceId: WS1, name: "one", createdAt: 0 })
  yield* keys.ensureWorkspace({ workspaceId: WS2, name: "two", createdAt: 0 })
})

const saveAll = (records: ReadonlyArray<AppStore.AppRecord>) =>
  Effect.flatMap(
    AppStore.AppStore,
    (apps) => Effect.forEach(records, (r) => apps.save(r, version(r)), { discard: true })
  )

/** Runs the app-store contract against fresh storage from `makeStorage` for every test. */
export const suite = (name: string, makeStorage: MakeStorage) =>
  describe(`AppStore contract: ${name}`, () => {
    const test = storageTest(makeStorage)

    test(
      "apps and versions read back; a save replaces the app and keeps an existing version",
      Effect.gen(function*() {
        yield* seedWorkspaces
        const apps = yield* AppStore.AppStore
        const first = app(1, "Poster", { workspaceId: WS1, isPublic: false }, "Makes posters")
        const definition = { name: "Ä", nodes: [{ id: "a", type: "input.text", config: { name: "ä" } }], edges: [] }
        yield* apps.save(first, version(first, definition))
        expect(yield* apps.get(first.appId)).toEqual(Option.some(first))
        expect(yield* apps.getVersion(first.workflowId)).toEqual(Option.some(version(first, definition)))
        const renamed = { ...first, name: "Poster 2", isPublic: true, updatedAt: 9 }
        yield* apps.save(renamed, version(first, { name: "changed", nodes: [], edges: [] }))
        expect(yield* apps.get(first.appId)).toEqual(Option.some(renamed))
        expect(yield* apps.getVersion(first.workflowId)).toEqual(Option.some(version(first, definition)))
        const next = { ...renamed, workflowId: Ids.WorkflowId.make(uuid(4, 50)) }
        const second = { name: "Poster 2", description: "v2", nodes: [], edges: [] }
        yield* apps.save(next, version(next, second))
        expect(Option.map(yield* apps.getVersion(next.workflowId), (v) => v.definition)).toEqual(Option.some(second))
        expect(yield* apps.get(Ids.AppId.make(uuid(3, 99)))).toEqual(Option.none())
        expect(yield* apps.getVersion(Ids.WorkflowId.make(uuid(4, 99)))).toEqual(Option.none())
      })
    )

    test(
      "findByName looks in one owner only (null: the operator's apps)",
      Effect.gen(function*() {
        yield* seedWorkspaces
        const apps = yield* AppStore.AppStore
        const own = app(1, "Same", { workspaceId: WS1, isPublic: false })
        const operator = app(2, "Same", { workspaceId: null, isPublic: true })
        yield* saveAll([own, operator])
        expect(yield* apps.findByName(WS1, "Same")).toEqual(Option.some(own))
        expect(yield* apps.findByName(null, "Same")).toEqual(Option.some(operator))
        expect(yield* apps.findByName(WS2, "Same")).toEqual(Option.none())
        expect(yield* apps.findByName(WS1, "same")).toEqual(Option.none())
      })
    )

    test(
      "lists own apps, then up to the limit of public apps not owned, each by name then id",
      Effect.gen(function*() {
        yield* seedWorkspaces
        const apps = yield* AppStore.AppStore
        const ownPrivate = app(1, "b own", { workspaceId: WS1, isPublic: false })
        const ownPublic = app(2, "a own public", { workspaceId: WS1, isPublic: true })
        const otherPrivate = app(3, "a other private", { workspaceId: WS2, isPublic: false })
        const otherPublic = app(4, "c other public", { workspaceId: WS2, isPublic: true })
        const operatorZ = app(5, "z operator", { workspaceId: null, isPublic: true })
        const operatorA = app(7, "a operator", { workspaceId: null, isPublic: true })
        const operatorA2 = app(6, "a operator", { workspaceId: null, isPublic: true })
        yield* saveAll([ownPrivate, ownPublic, otherPrivate, otherPublic, operatorZ, operatorA, operatorA2])
        expect(yield* apps.list({ workspaceId: WS1, search: undefined, publicLimit: 10 })).toEqual({
          workspace: [ownPublic, ownPrivate],
          public: [operatorA2, operatorA, otherPublic, operatorZ]
        })
        expect(yield* apps.list({ workspaceId: WS1, search: undefined, publicLimit: 2 })).toEqual({
          workspace: [ownPublic, ownPrivate],
          public: [operatorA2, operatorA]
        })
        expect(yield* apps.list({ workspaceId: null, search: undefined, publicLimit: 10 })).toEqual({
          workspace: [],
          public: [operatorA2, operatorA, ownPublic, otherPublic, operatorZ]
        })
        expect(yield* apps.listAll).toEqual([
          operatorA2,
          operatorA,
          otherPrivate,
          ownPublic,
          ownPrivate,
          otherPublic,
          operatorZ
        ])
      })
    )

    test(
      "search matches name or description as a plain substring, ignoring case (all of Unicode)",
      Effect.gen(function*() {
        yield* seedWorkspaces
        const apps = yield* AppStore.AppStore
        const poster = app(1, "Poster", { workspaceId: null, isPublic: true }, "Renders a TITLE")
        const banner = app(2, "Banner 100%", { workspaceId: WS1, isPublic: false }, null)
        const other = app(3, "Other_app", { workspaceId: null, isPublic: true }, "nothing")
        yield* saveAll([poster, banner, other])
        const search = (s: string) => apps.list({ workspaceId: WS1, search: s, publicLimit: 10 })
        expect(yield* search("poSTER")).toEqual({ workspace: [], public: [poster] })
        expect(yield* search("title")).toEqual({ workspace: [], public: [poster] })
        expect(yield* search("0%")).toEqual({ workspace: [banner], public: [] })
        expect(yield* search("r_a")).toEqual({ workspace: [], public: [other] })
        expect(yield* search("%")).toEqual({ workspace: [banner], public: [] })
        expect(yield* search("absent")).toEqual({ workspace: [], public: [] })
        const eclair = app(4, "ÉCLAIR Studio", { workspaceId: null, isPublic: true }, "Ästhetik")
        yield* saveAll([eclair])
        expect(yield* search("éclair")).toEqual({ workspace: [], public: [eclair] })
        expect(yield* search("ästhetik")).toEqual({ workspace: [], public: [eclair] })
      })
    )
  })
