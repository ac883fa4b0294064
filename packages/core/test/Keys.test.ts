/**
 * API keys as an operator sees them: listed with the hint the console shows (`aex_Twbo…myLI`),
 * their workspace, user, creation and last use (recorded at most once per `KEY_USE_RESOLUTION`,
 * off the request's path), and revoked by that hint, by the whole key, by id or by the stored hint.
 */
import { Ids } from "@appexec/api"
import { Appexec, KeyStore } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { hashKey } from "../src/internal/facade/ApiKeys.js"

/** Until `done` holds, yielding between looks (the recorded use is written by a fiber of its own). */
const eventually = <E>(what: string, done: Effect.Effect<boolean, E>) =>
  Effect.gen(function*() {
    for (let turn = 0; turn < 1000; turn++) {
      if (yield* done) return
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage(what)
  })

const shownOf = (key: string) => `${key.slice(0, 8)}…${key.slice(-4)}`

describe("API keys for operators", () => {
  it.scoped("are listed with their shown hint, workspace, user, creation and last use", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      yield* TestClock.adjust("2 seconds")
      const ann = yield* appexec.keys.create({ workspace: "acme", user: "ann" })
      yield* TestClock.adjust("1 second")
      const bob = yield* appexec.keys.create({ workspace: "beta", user: "bob" })
      expect(yield* appexec.keys.list).toEqual([
        {
          apiKeyId: ann.record.apiKeyId,
          hint: shownOf(ann.key),
          workspace: "acme",
          user: "ann",
          createdAt: 2_000,
          lastUsedAt: null
        },
        {
          apiKeyId: bob.record.apiKeyId,
          hint: shownOf(bob.key),
          workspace: "beta",
          user: "bob",
          createdAt: 3_000,
          lastUsedAt: null
        }
      ])
      expect((yield* appexec.workspaces.list).map((w) => w.name)).toEqual(["acme", "beta"])
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("a use is recorded at once, then at most once per KEY_USE_RESOLUTION", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const created = yield* appexec.keys.create({ workspace: "acme" })
      const lastUsed = Effect.map(appexec.keys.list, (keys) => keys[0]!.lastUsedAt)
      yield* TestClock.adjust("10 seconds")
      yield* appexec.keys.authenticate({ "x-api-key": created.key })
      yield* eventually("the use was never recorded", Effect.map(lastUsed, (at) => at === 10_000))
      // Within the resolution: not written again.
      yield* TestClock.adjust("30 seconds")
      yield* appexec.keys.authenticate({ "x-api-key": created.key })
      for (let turn = 0; turn < 100; turn++) yield* Effect.yieldNow()
      expect(yield* lastUsed).toBe(10_000)
      yield* TestClock.adjust(Appexec.KEY_USE_RESOLUTION)
      yield* appexec.keys.authenticate({ "x-api-key": created.key })
      yield* eventually("the later use was never recorded", Effect.map(lastUsed, (at) => at === 100_000))
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("are revoked by the hint as shown (… or ...), the whole key, the id or the stored hint", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const keys = yield* Effect.all(Array.from({ length: 6 }, (_, n) => appexec.keys.create({ workspace: `w${n}` })))
      const [a, b, c, d, e, f] = keys
      // A hint whose end does not match revokes nothing.
      expect(yield* appexec.keys.revoke(`${a!.key.slice(0, 8)}…${a!.key.slice(-4) === "AAAA" ? "BBBB" : "AAAA"}`))
        .toBe(0)
      expect(yield* appexec.keys.revoke(shownOf(a!.key))).toBe(1)
      expect(yield* appexec.keys.revoke(` ${b!.key.slice(0, 8)}...${b!.key.slice(-4)}\n`)).toBe(1)
      expect(yield* appexec.keys.revoke(c!.key)).toBe(1)
      expect(yield* appexec.keys.revoke(d!.record.apiKeyId)).toBe(1)
      expect(yield* appexec.keys.revoke(e!.record.hint)).toBe(1)
      expect(yield* appexec.keys.revoke(`${f!.record.hint}…`)).toBe(1)
      // Each once: revoked keys are neither listed nor revoked again.
      expect(yield* appexec.keys.revoke(c!.key)).toBe(0)
      expect(yield* appexec.keys.list).toEqual([])
      for (const key of keys) {
        expect(yield* Effect.flip(appexec.keys.authenticate({ "x-api-key": key.key }))).toMatchObject({
          reason: "revoked"
        })
      }
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("a key made before its end was kept shows its stored hint, and gets its end at its next use", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const store = yield* KeyStore.KeyStore
      const { user } = yield* appexec.keys.create({ workspace: "acme", user: "old" })
      yield* Effect.forEach(yield* appexec.keys.list, (k) => appexec.keys.revoke(k.apiKeyId))
      // As an older appexec stored it: the prefix and 6 characters, no end, no use.
      const key = `aex_Twbo12${"x".repeat(33)}myLI`
      const apiKeyId = Ids.ApiKeyId.make("00000000-0000-4000-8000-0000000000aa")
      yield* store.insertKey({
        apiKeyId,
        workspaceId: user.workspaceId,
        userId: user.userId,
        hash: hashKey(key),
        hint: "aex_Twbo12",
        hintTail: null,
        createdAt: 0,
        revokedAt: null,
        lastUsedAt: null
      })
      expect((yield* appexec.keys.list).map((k) => k.hint)).toEqual(["aex_Twbo12…"])
      // Its end not known yet, the console's hint matches nothing.
      expect(yield* appexec.keys.revoke("aex_Twbo…myLI")).toBe(0)
      yield* appexec.keys.authenticate({ "x-api-key": key })
      yield* eventually(
        "the key's end was never kept",
        Effect.map(appexec.keys.list, (listed) => listed[0]?.hint === "aex_Twbo…myLI")
      )
      expect(yield* appexec.keys.revoke("aex_Twbo…myLI")).toBe(1)
    }).pipe(Effect.provide(TestHarness.layer())))
})
