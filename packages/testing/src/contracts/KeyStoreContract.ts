/**
 * Contract of `KeyStore`: workspaces unique by name and listed with their limits, users unique by name within a
 * workspace, keys found by hash, revoked by id or hint, listed while active with their
 * workspace's and user's names, and their uses recorded; the key revision, where there is one,
 * moves on revocation and not on a recorded use.
 */
import { Ids } from "@appexec/api"
import { KeyStore } from "@appexec/core"
import { describe, expect } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type MakeStorage, storageTest, uuid } from "../internal/StorageFixtures.js"

const workspace = (n: number, name = `ws ${n}`): KeyStore.WorkspaceRecord => ({
  workspaceId: Ids.WorkspaceId.make(uuid(1, n)),
  name,
  createdAt: n
})
const user = (n: number, workspaceN: number, name = `user ${n}`): KeyStore.UserRecord => ({
  userId: Ids.UserId.make(uuid(2, n)),
  workspaceId: Ids.WorkspaceId.make(uuid(1, workspaceN)),
  name,
  createdAt: n
})
const key = (n: number, hint = `aex_hint${n}`): KeyStore.ApiKeyRecord => ({
  apiKeyId: Ids.ApiKeyId.make(uuid(7, n)),
  workspaceId: Ids.WorkspaceId.make(uuid(1, 1)),
  userId: Ids.UserId.make(uuid(2, 1)),
  hash: `${n}`.padStart(64, "a"),
  hint,
  hintTail: n === 3 ? null : `end${n}`,
  createdAt: n,
  revokedAt: null,
  lastUsedAt: null
})

/** Runs the key-store contract against fresh storage from `makeStorage` for every test. */
export const suite = (name: string, makeStorage: MakeStorage) =>
  describe(`KeyStore contract: ${name}`, () => {
    const test = storageTest(makeStorage)

    test(
      "a workspace name is taken once; the existing workspace is returned",
      Effect.gen(function*() {
        const keys = yield* KeyStore.KeyStore
        expect(yield* keys.findWorkspace("ws 1")).toEqual(Option.none())
        expect(yield* keys.ensureWorkspace(workspace(1))).toEqual(workspace(1))
        expect(yield* keys.ensureWorkspace(workspace(2, "ws 1"))).toEqual(workspace(1))
        expect(yield* keys.findWorkspace("ws 1")).toEqual(Option.some(workspace(1)))
        expect(yield* keys.findWorkspace("WS 1")).toEqual(Option.none())
      })
    )

    test(
      "workspaces are listed oldest first",
      Effect.gen(function*() {
        const keys = yield* KeyStore.KeyStore
        expect(yield* keys.listWorkspaces).toEqual([])
        yield* keys.ensureWorkspace(workspace(2))
        yield* keys.ensureWorkspace(workspace(1))
        expect(yield* keys.listWorkspaces).toEqual([workspace(1), workspace(2)])
      })
    )

    test(
      "a workspace's limits are set, left as they are when not named, and put back to the default by null",
      Effect.gen(function*() {
        const keys = yield* KeyStore.KeyStore
        yield* keys.ensureWorkspace(workspace(1))
        yield* keys.ensureWorkspace(workspace(2))
        expect(yield* keys.setWorkspaceLimits(workspace(1).workspaceId, { maxRunning: 3, maxPriority: -2 })).toBe(true)
        expect(yield* keys.findWorkspace("ws 1")).toEqual(
          Option.some({ ...workspace(1), maxRunning: 3, maxPriority: -2 })
        )
        expect(yield* keys.getWorkspace(workspace(1).workspaceId)).toEqual(
          Option.some({ ...workspace(1), maxRunning: 3, maxPriority: -2 })
        )
        expect(yield* keys.getWorkspace(workspace(2).workspaceId)).toEqual(Option.some(workspace(2)))
        expect(yield* keys.getWorkspace(Ids.WorkspaceId.make(uuid(1, 9)))).toEqual(Option.none())
        expect(yield* keys.setWorkspaceLimits(workspace(1).workspaceId, { maxPriority: 5 })).toBe(true)
        expect(yield* keys.listWorkspaces).toEqual([{ ...workspace(1), maxRunning: 3, maxPriority: 5 }, workspace(2)])
        expect(yield* keys.setWorkspaceLimits(workspace(1).workspaceId, { maxRunning: null })).toBe(true)
        expect(yield* keys.findWorkspace("ws 1")).toEqual(Option.some({ ...workspace(1), maxPriority: 5 }))
        expect(yield* keys.setWorkspaceLimits(workspace(1).workspaceId, {})).toBe(true)
        expect(yield* keys.findWorkspace("ws 1")).toEqual(Option.some({ ...workspace(1), maxPriority: 5 }))
        expect(yield* keys.setWorkspaceLimits(workspace(1).workspaceId, { maxRunning: null, maxPriority: null }))
          .toBe(true)
        expect(yield* keys.listWorkspaces).toEqual([workspace(1), workspace(2)])
        expect(yield* keys.setWorkspaceLimits(Ids.WorkspaceId.make(uuid(1, 9)), { maxRunning: 1 })).toBe(false)
      })
    )

    test(
      "active keys are listed oldest first with their workspace's and user's names",
      Effect.gen(function*() {
        const keys = yield* KeyStore.KeyStore
        yield* keys.ensureWorkspace(workspace(1, "acme"))
        yield* keys.ensureUser(user(1, 1, "ann"))
        for (const n of [2, 1, 3]) yield* keys.insertKey(key(n))
        yield* keys.revokeKey(key(2).apiKeyId, 10)
        expect(yield* keys.listKeys).toEqual([
          { key: key(1), workspace: "acme", user: "ann" },
          { key: key(3), workspace: "acme", user: "ann" }
        ])
      })
    )

    test(
      "a use moves lastUsedAt forward only, and fills a hint tail that is not known",
      Effect.gen(function*() {
        const keys = yield* KeyStore.KeyStore
        yield* keys.ensureWorkspace(workspace(1))
        yield* keys.ensureUser(user(1, 1))
        yield* keys.insertKey(key(1))
        yield* keys.insertKey(key(3))
        yield* keys.markUsed([
          { apiKeyId: key(1).apiKeyId, at: 500, hintTail: "zzzz" },
          { apiKeyId: key(3).apiKeyId, at: 400, hintTail: "wxyz" }
        ])
        expect(yield* keys.findKeyByHash(key(1).hash)).toEqual(Option.some({ ...key(1), lastUsedAt: 500 }))
        expect(yield* keys.findKeyByHash(key(3).hash)).toEqual(
          Option.some({ ...key(3), lastUsedAt: 400, hintTail: "wxyz" })
        )
        yield* keys.markUsed([{ apiKeyId: key(1).apiKeyId, at: 300, hintTail: "zzzz" }])
        expect(yield* keys.findKeyByHash(key(1).hash)).toEqual(Option.some({ ...key(1), lastUsedAt: 500 }))
        yield* keys.markUsed([{ apiKeyId: key(1).apiKeyId, at: 900, hintTail: "zzzz" }])
        expect(yield* keys.findKeyByHash(key(1).hash)).toEqual(Option.some({ ...key(1), lastUsedAt: 900 }))
      })
    )

    test(
      "a user name is taken once per workspace",
      Effect.gen(function*() {
        const keys = yield* KeyStore.KeyStore
        yield* keys.ensureWorkspace(workspace(1))
        yield* keys.ensureWorkspace(workspace(2))
        expect(yield* keys.ensureUser(user(1, 1, "ann"))).toEqual(user(1, 1, "ann"))
        expect(yield* keys.ensureUser(user(2, 1, "ann"))).toEqual(user(1, 1, "ann"))
        expect(yield* keys.ensureUser(user(3, 2, "ann"))).toEqual(user(3, 2, "ann"))
      })
    )

    test(
      "keys are found by hash, and revoked once by id or by hint",
      Effect.gen(function*() {
        const keys = yield* KeyStore.KeyStore
        yield* keys.ensureWorkspace(workspace(1))
        yield* keys.ensureUser(user(1, 1))
        for (const n of [1, 2, 3]) yield* keys.insertKey(key(n, n === 3 ? "aex_hint2" : `aex_hint${n}`))
        expect(yield* keys.findKeyByHash(key(1).hash)).toEqual(Option.some(key(1)))
        expect(yield* keys.findKeyByHash("f".repeat(64))).toEqual(Option.none())
        expect(yield* keys.revokeKey(key(1).apiKeyId, 50)).toBe(1)
        expect(yield* keys.revokeKey(key(1).apiKeyId, 60)).toBe(0)
        expect(yield* keys.findKeyByHash(key(1).hash)).toEqual(Option.some({ ...key(1), revokedAt: 50 }))
        expect(yield* keys.revokeKey("aex_hint2", 70)).toBe(2)
        expect(yield* keys.revokeKey("nothing", 70)).toBe(0)
      })
    )

    test(
      "the key revision, when the store has one, moves with every revocation and stays put otherwise (a use too)",
      Effect.gen(function*() {
        const keys = yield* KeyStore.KeyStore
        if (keys.keyRevision === undefined) return
        yield* keys.ensureWorkspace(workspace(1))
        yield* keys.ensureUser(user(1, 1))
        const initial = yield* keys.keyRevision
        yield* keys.insertKey(key(1))
        yield* keys.insertKey(key(2))
        yield* keys.findKeyByHash(key(1).hash)
        yield* keys.markUsed([{ apiKeyId: key(1).apiKeyId, at: 40, hintTail: "abcd" }])
        expect(yield* keys.keyRevision).toBe(initial)
        expect(yield* keys.revokeKey(key(1).apiKeyId, 50)).toBe(1)
        const afterFirst = yield* keys.keyRevision
        expect(afterFirst).not.toBe(initial)
        expect(yield* keys.revokeKey("aex_hint2", 60)).toBe(1)
        expect(yield* keys.keyRevision).not.toBe(afterFirst)
      })
    )
  })
