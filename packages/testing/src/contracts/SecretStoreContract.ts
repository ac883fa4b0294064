/**
 * Contract of the operator's secrets over a storage's `SealedSecretStore`, through the
 * `SecretStore` an instance builds on it (`SecretStore.make`, sealing with the master key): set,
 * listed by name and scope only, a workspace's secret over the instance's, deleted per scope; at
 * rest only sealed values, each bound to its name and scope (moved to another row, it does not
 * open); a store with another master key fails clearly, naming the secret and never its value; a
 * value sealed with a previous master key is sealed again with the current one (at start, and on
 * read), and one sealed with a next master key opens and is left as it is; a reseal never
 * overwrites a value set meanwhile; nothing is set without a master key.
 */
import { Ids } from "@appexec/api"
import { AppexecConfig, SealedSecretStore, SecretSealing, SecretStore } from "@appexec/core"
import { describe, expect } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Option, Redacted, TestClock } from "effect"
import { type MakeStorage, storageTest, uuid } from "../internal/StorageFixtures.js"

const masterKey = (fill: number) => Redacted.make(new Uint8Array(32).fill(fill))
const ws1 = Ids.WorkspaceId.make(uuid(1, 1))
const ws2 = Ids.WorkspaceId.make(uuid(1, 2))

/** A `SecretStore` over the storage in context, with these master keys. */
const storeWith = (config: Partial<AppexecConfig.AppexecOptions>) =>
  SecretStore.make.pipe(Effect.provide(AppexecConfig.AppexecConfig.layer(config)))

const sealedWith = (current: number, previous: ReadonlyArray<number> = []) =>
  storeWith({ masterKey: masterKey(current), previousMasterKeys: previous.map(masterKey) })

const rows = Effect.flatMap(SealedSecretStore.SealedSecretStore, (s) => s.list)

const valueOf = (found: Option.Option<Redacted.Redacted<string>>) => Option.map(found, Redacted.value)

/** The failure of `effect` as text (its cause included), or "" when it succeeds. */
const failureOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(
    Effect.exit(effect),
    (exit) =>
      Exit.isFailure(exit)
        ? Cause.failureOption(exit.cause).pipe(
          Option.map((e) => `${String(e)} ${JSON.stringify(e)}`),
          Option.getOrElse(() => Cause.pretty(exit.cause))
        )
        : ""
  )

/** Runs the secret-store contract against fresh storage from `makeStorage` for every test. */
export const suite = (name: string, makeStorage: MakeStorage) =>
  describe(`SecretStore contract: ${name}`, () => {
    const test = storageTest(makeStorage)

    test(
      "sets, lists names and scopes only, resolves a workspace's secret over the instance's, deletes per scope",
      Effect.gen(function*() {
        const store = yield* sealedWith(1)
        expect(yield* store.list).toEqual([])
        yield* TestClock.adjust(Duration.millis(1_000))
        yield* store.set("API_TOKEN", Redacted.make("instance-token"), undefined)
        yield* TestClock.adjust(Duration.millis(1_000))
        yield* store.set("API_TOKEN", Redacted.make("workspace-token"), ws1)
        yield* store.set("other", Redacted.make("only ws1"), ws1)
        expect(yield* store.list).toEqual([
          { name: "API_TOKEN", workspaceId: undefined, updatedAt: 1_000 },
          { name: "API_TOKEN", workspaceId: ws1, updatedAt: 2_000 },
          { name: "other", workspaceId: ws1, updatedAt: 2_000 }
        ])
        expect(valueOf(yield* store.resolve("API_TOKEN", ws1))).toEqual(Option.some("workspace-token"))
        expect(valueOf(yield* store.resolve("API_TOKEN", ws2))).toEqual(Option.some("instance-token"))
        expect(valueOf(yield* store.resolve("other", ws2))).toEqual(Option.none())
        expect(valueOf(yield* store.resolve("api_token", ws1))).toEqual(Option.none())

        // Set again: the value and the time are replaced.
        yield* TestClock.adjust(Duration.millis(1_000))
        yield* store.set("API_TOKEN", Redacted.make("instance-token-2"), undefined)
        expect(valueOf(yield* store.resolve("API_TOKEN", ws2))).toEqual(Option.some("instance-token-2"))
        expect((yield* store.list)[0]).toEqual({ name: "API_TOKEN", workspaceId: undefined, updatedAt: 3_000 })

        // The workspace's own deleted: the instance's applies again; a second delete finds none.
        expect(yield* store.delete("API_TOKEN", ws1)).toBe(true)
        expect(yield* store.delete("API_TOKEN", ws1)).toBe(false)
        expect(valueOf(yield* store.resolve("API_TOKEN", ws1))).toEqual(Option.some("instance-token-2"))
        expect(yield* store.delete("API_TOKEN", undefined)).toBe(true)
        expect(valueOf(yield* store.resolve("API_TOKEN", ws1))).toEqual(Option.none())
        expect((yield* store.list).map((e) => e.name)).toEqual(["other"])
      })
    )

    test(
      "keeps only sealed values, bound to their name and scope: moved to another row, a value does not open",
      Effect.gen(function*() {
        const store = yield* sealedWith(1)
        const value = "sk-live-0123456789abcdef"
        yield* store.set("API_TOKEN", Redacted.make(value), undefined)
        yield* store.set("API_TOKEN", Redacted.make(value), ws1)
        yield* store.set("MULTI", Redacted.make("line one\nline two €"), ws2)
        const stored = yield* rows
        expect(stored).toHaveLength(3)
        for (const row of stored) {
          expect(SecretSealing.isSealed(row.sealed)).toBe(true)
          expect(row.sealed).not.toContain(value)
        }
        // The same value in two scopes is sealed apart.
        const [a, b] = stored.filter((r) => r.name === "API_TOKEN")
        expect(a!.sealed).not.toBe(b!.sealed)
        expect(valueOf(yield* store.resolve("MULTI", ws2))).toEqual(Option.some("line one\nline two €"))

        // The instance's sealed value copied into the workspace's row does not open there.
        const sealedStore = yield* SealedSecretStore.SealedSecretStore
        const instanceRow = stored.find((r) => r.name === "API_TOKEN" && r.workspaceId === undefined)!
        yield* sealedStore.put({ ...instanceRow, workspaceId: ws1 })
        const failure = yield* failureOf(store.resolve("API_TOKEN", ws1))
        expect(failure).toContain(`API_TOKEN of workspace ${ws1} cannot be opened`)
        expect(failure).not.toContain(value)
        // Nor under another name.
        yield* sealedStore.put({ ...instanceRow, name: "OTHER" })
        expect(yield* failureOf(store.resolve("OTHER", ws2))).toContain("OTHER of the instance cannot be opened")
      })
    )

    test(
      "a store with another master key fails clearly, naming the secret and never its value",
      Effect.gen(function*() {
        yield* (yield* sealedWith(1)).set("API_TOKEN", Redacted.make("never-shown-token"), undefined)
        const wrong = yield* sealedWith(2)
        const failure = yield* failureOf(wrong.resolve("API_TOKEN", ws1))
        expect(failure).toContain("API_TOKEN of the instance cannot be opened")
        expect(failure).toContain("another key")
        expect(failure).not.toContain("never-shown-token")
        // Listing needs no key; setting again under the new key replaces the value.
        expect((yield* wrong.list).map((e) => e.name)).toEqual(["API_TOKEN"])
        yield* wrong.set("API_TOKEN", Redacted.make("new-token"), undefined)
        expect(valueOf(yield* wrong.resolve("API_TOKEN", ws1))).toEqual(Option.some("new-token"))
        // Through require, a node sees that it could not be read, not why.
        const asNode = yield* failureOf(
          SecretStore.require("API_TOKEN", ws1).pipe(
            Effect.provideService(SecretStore.SecretStore, yield* sealedWith(3))
          )
        )
        expect(asNode).toContain("The secret API_TOKEN could not be read")
      })
    )

    test(
      "values sealed with a previous master key are sealed again with the current one, at start and on read",
      Effect.gen(function*() {
        const old = yield* sealedWith(1)
        yield* old.set("AT_START", Redacted.make("start-value"), undefined)
        const before = yield* rows
        // At start: the store with the new key and the old one as previous seals the row again.
        const rotated = yield* sealedWith(2, [1])
        const after = yield* rows
        expect(after[0]!.sealed).not.toBe(before[0]!.sealed)
        expect(after[0]!.updatedAt).toBe(before[0]!.updatedAt)
        // On read: a value another process sealed with the old key after this store started.
        yield* old.set("ON_READ", Redacted.make("read-value"), ws1)
        const written = (yield* rows).find((r) => r.name === "ON_READ")!.sealed
        expect(valueOf(yield* rotated.resolve("ON_READ", ws1))).toEqual(Option.some("read-value"))
        expect((yield* rows).find((r) => r.name === "ON_READ")!.sealed).not.toBe(written)
        // The old key is no longer needed for either.
        const newOnly = yield* sealedWith(2)
        expect(valueOf(yield* newOnly.resolve("AT_START", ws2))).toEqual(Option.some("start-value"))
        expect(valueOf(yield* newOnly.resolve("ON_READ", ws1))).toEqual(Option.some("read-value"))
      })
    )

    test(
      "the phases of a change of master key: a next key opens what the new key sealed and never seals it back",
      Effect.gen(function*() {
        // Phase 1: the old key seals, the new one (next) only opens.
        const learning = yield* storeWith({ masterKey: masterKey(1), nextMasterKeys: [masterKey(2)] })
        yield* learning.set("TOKEN", Redacted.make("the-token"), undefined)
        // Phase 2 starts elsewhere: it seals the value again with the new key.
        const switched = yield* sealedWith(2, [1])
        const resealed = (yield* rows)[0]!.sealed
        expect(valueOf(yield* switched.resolve("TOKEN", ws1))).toEqual(Option.some("the-token"))
        // The process of phase 1 reads it with its next key, and leaves it as it is.
        expect(valueOf(yield* learning.resolve("TOKEN", ws1))).toEqual(Option.some("the-token"))
        yield* storeWith({ masterKey: masterKey(1), nextMasterKeys: [masterKey(2)] })
        expect((yield* rows)[0]!.sealed).toBe(resealed)
        // The old key alone no longer opens it: a process of phase 0 must not run in phase 2.
        expect(yield* failureOf((yield* sealedWith(1)).resolve("TOKEN", ws1))).toContain("cannot be opened")
      })
    )

    test(
      "a reseal replaces only the value it read: one set meanwhile is kept",
      Effect.gen(function*() {
        const sealedStore = yield* SealedSecretStore.SealedSecretStore
        yield* sealedStore.put({ name: "A", workspaceId: undefined, sealed: "sealed:v1:first", updatedAt: 1 })
        expect(yield* sealedStore.reseal("A", undefined, "sealed:v1:other", "sealed:v1:again")).toBe(false)
        expect(yield* sealedStore.reseal("A", ws1, "sealed:v1:first", "sealed:v1:again")).toBe(false)
        expect(yield* sealedStore.reseal("A", undefined, "sealed:v1:first", "sealed:v1:again")).toBe(true)
        expect(yield* rows).toEqual([{ name: "A", workspaceId: undefined, sealed: "sealed:v1:again", updatedAt: 1 }])
        expect(yield* sealedStore.find("A", ws1)).toEqual(yield* rows)
      })
    )

    test(
      "refuses a bad name, an empty value and one too long; sets nothing without a master key",
      Effect.gen(function*() {
        const store = yield* sealedWith(1)
        expect(yield* failureOf(store.set("1BAD", Redacted.make("v"), undefined))).toContain(
          "'1BAD' is not a secret's name"
        )
        expect(yield* failureOf(store.set("has-dash", Redacted.make("v"), undefined))).toContain(
          "is not a secret's name"
        )
        expect(yield* failureOf(store.set("EMPTY", Redacted.make(" \n"), undefined))).toContain(
          "the value of the secret EMPTY is empty"
        )
        const long = "x".repeat(SecretStore.MAX_VALUE_BYTES + 1)
        const tooLong = yield* failureOf(store.set("LONG", Redacted.make(long), undefined))
        expect(tooLong).toContain(`more than the ${SecretStore.MAX_VALUE_BYTES}`)
        expect(tooLong).not.toContain("xxxx")
        const unsealed = yield* storeWith({})
        expect(yield* failureOf(unsealed.set("TOKEN", Redacted.make("v"), undefined))).toContain(
          "no master key is configured"
        )
        expect(yield* rows).toEqual([])
        // A value sealed earlier cannot be read without one, and says why.
        yield* store.set("TOKEN", Redacted.make("v"), undefined)
        expect(yield* failureOf((yield* storeWith({})).resolve("TOKEN", ws1))).toContain("no master key is configured")
      })
    )
  })
