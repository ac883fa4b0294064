/**
 * Contract of `KeyStore`: workspaces unique by name, users unique by name within a workspace,
 * keys found by hash, listed without their hash and revoked by id or hint; the key revision, where there is one, moves on revocation.
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
  createdAt: n,
  revokedAt: null
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
      "keys are listed oldest first with their workspace's and user's names, revoked ones too, never a hash",
      Effect.gen(function*() {
        const keys = yield* KeyStore.KeyStore
        yield* keys.ensureWorkspace(workspace(1, "ws one"))
        yield* keys.ensureWorkspace(workspace(2, "ws two"))
        yield* keys.ensureUser(user(1, 1, "ann"))
        yield* keys.ensureUser(user(2, 2, "bob"))
        const other = { ...key(2), workspaceId: workspace(2).workspaceId, userId: user(2, 2).userId }
        yield* keys.insertKey({ ...key(3), createdAt: 30 })
        yield* keys.insertKey(other)
        yield* keys.insertKey(key(1))
        yield* keys.revokeKey(key(1).apiKeyId, 50)
        const listed = (record: KeyStore.ApiKeyRecord, workspaceName: string, userName: string) => {
          const { hash: _hash, ...rest } = record
          return { ...rest, workspaceName, userName }
        }
        expect(yield* keys.listKeys()).toEqual([
          listed({ ...key(1), revokedAt: 50 }, "ws one", "ann"),
          listed(other, "ws two", "bob"),
          listed({ ...key(3), createdAt: 30 }, "ws one", "ann")
        ])
        expect(yield* keys.listKeys(workspace(2).workspaceId)).toEqual([listed(other, "ws two", "bob")])
        expect(yield* keys.listKeys(Ids.WorkspaceId.make(uuid(1, 9)))).toEqual([])
      })
    )

    test(
      "the key revision, when the store has one, moves with every revocation and stays put otherwise",
      Effect.gen(function*() {
        const keys = yield* KeyStore.KeyStore
        if (keys.keyRevision === undefined) return
        yield* keys.ensureWorkspace(workspace(1))
        yield* keys.ensureUser(user(1, 1))
        const initial = yield* keys.keyRevision
        yield* keys.insertKey(key(1))
        yield* keys.insertKey(key(2))
        yield* keys.findKeyByHash(key(1).hash)
        expect(yield* keys.keyRevision).toBe(initial)
        expect(yield* keys.revokeKey(key(1).apiKeyId, 50)).toBe(1)
        const afterFirst = yield* keys.keyRevision
        expect(afterFirst).not.toBe(initial)
        expect(yield* keys.revokeKey("aex_hint2", 60)).toBe(1)
        expect(yield* keys.keyRevision).not.toBe(afterFirst)
      })
    )
  })
