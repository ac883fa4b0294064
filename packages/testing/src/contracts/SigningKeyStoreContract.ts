/**
 * Contract of `SigningKeyStore`: keys listed oldest first, inserted once per `kid`, retired
 * once, with the publication deadline given at retirement; a key's secret replaced as given
 * (sealed secrets are long text, kept byte for byte).
 */
import { SigningKeyStore } from "@appexec/core"
import { describe, expect } from "@effect/vitest"
import { Effect } from "effect"
import { type MakeStorage, storageTest } from "../internal/StorageFixtures.js"

const key = (kid: string, createdAt: number): SigningKeyStore.SigningKeyRecord => ({
  kid,
  secretKey: `${createdAt}`.padStart(64, "0"),
  publicKey: `${createdAt}`.padStart(64, "1"),
  createdAt,
  retiredAt: null
})

/** Runs the signing-key-store contract against fresh storage from `makeStorage` for every test. */
export const suite = (name: string, makeStorage: MakeStorage) =>
  describe(`SigningKeyStore contract: ${name}`, () => {
    const test = storageTest(makeStorage)

    test(
      "lists keys in insertion order; a second insert of a kid is ignored",
      Effect.gen(function*() {
        const store = yield* SigningKeyStore.SigningKeyStore
        expect(yield* store.list).toEqual([])
        yield* store.insert(key("k2", 1))
        yield* store.insert(key("k1", 2))
        yield* store.insert({ ...key("k2", 3), secretKey: "f".repeat(64) })
        expect(yield* store.list).toEqual([key("k2", 1), key("k1", 2)])
      })
    )

    test(
      "retires every unretired key but one, keeping earlier retirement times",
      Effect.gen(function*() {
        const store = yield* SigningKeyStore.SigningKeyStore
        yield* store.insert(key("a", 1))
        yield* store.insert(key("b", 2))
        yield* store.retireAllBut("b", 10)
        yield* store.insert(key("c", 3))
        yield* store.retireAllBut("c", 20)
        expect(yield* store.list).toEqual([
          { ...key("a", 1), retiredAt: 10 },
          { ...key("b", 2), retiredAt: 20 },
          key("c", 3)
        ])
      })
    )

    test(
      "replaces the secret of one key only, as given, and ignores an unknown kid",
      Effect.gen(function*() {
        const store = yield* SigningKeyStore.SigningKeyStore
        yield* store.insert(key("a", 1))
        yield* store.insert(key("b", 2))
        const sealed = `sealed:v1:${"n".repeat(16)}:${"c".repeat(64)}-_`
        yield* store.replaceSecret("a", sealed)
        yield* store.replaceSecret("missing", "x")
        expect(yield* store.list).toEqual([{ ...key("a", 1), secretKey: sealed }, key("b", 2)])
      })
    )

    test(
      "keeps the publication deadline given at retirement",
      Effect.gen(function*() {
        const store = yield* SigningKeyStore.SigningKeyStore
        yield* store.insert(key("a", 1))
        yield* store.insert(key("b", 2))
        yield* store.retireAllBut("b", 10, 3_600_010)
        expect(yield* store.list).toEqual([{ ...key("a", 1), retiredAt: 10, publishedUntil: 3_600_010 }, key("b", 2)])
      })
    )
  })
