import { Appexec } from "@appexec/core"
import { NodeListener } from "@appexec/platform-node"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readFile } from "node:fs/promises"
import { consume } from "./main.mjs"

/** The example Greeting app served by appexec's Node listener on 127.0.0.1, with a fresh API key. */
const served = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const definition: unknown = JSON.parse(
    yield* Effect.promise(() => readFile(new URL("../../packages/server/apps/greeting.json", import.meta.url), "utf8"))
  )
  yield* appexec.apps.import(definition, { owner: { public: true } })
  const { key } = yield* TestHarness.signIn("example", "consumer")
  const { url } = yield* NodeListener.serve({ logRequests: false })
  return { baseUrl: url, apiKey: key }
}).pipe(Effect.orDie)

describe("consumer example", () => {
  // Live time: the server's worker and the client's polling both run for real (about 50 ms).
  it.scopedLive("lists, inspects, starts and polls the Greeting app, then prints its text output", () =>
    Effect.gen(function*() {
      const { baseUrl, apiKey } = yield* served
      const log: Array<string> = []
      const lines = yield* Effect.promise(() =>
        consume({
          baseUrl,
          apiKey,
          appName: "Greeting",
          inputs: { who: "Ada", tone: "formal" },
          intervalMs: 20,
          log: (l) => log.push(l)
        })
      )
      expect(lines).toEqual(["Greeting (text): Hello Ada, in a formal tone."])
      expect(log[0]).toBe("Greeting: who* (text), tone (options)")
      expect(log[1]).toMatch(/^started [0-9a-f-]{36}: queued$/)
      expect(log.at(-1)).toBe("status: completed")
    }).pipe(Effect.provide(TestHarness.layer())))
})
