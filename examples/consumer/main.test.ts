import { Appexec } from "@appexec/core"
import { NodeListener } from "@appexec/platform-node"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { readFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"
import { consume, usage } from "./main.mjs"

const program = fileURLToPath(new URL("./main.mjs", import.meta.url))

/** `node main.mjs …args` with `env` (and no APPEXEC_ variable of the test's own): exit code and output. */
const runMain = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.async<{ code: number; stdout: string; stderr: string }>((resume) => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("APPEXEC_")))
    execFile(
      process.execPath,
      [program, ...args],
      { env: { ...clean, ...env }, timeout: 30_000 },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
    )
  })

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

  it.effect("with no arguments, or no key, prints its usage and no stack", () =>
    Effect.gen(function*() {
      const bare = yield* runMain([])
      expect(bare).toEqual({ code: 2, stdout: "", stderr: `${usage}\n` })
      expect(usage).toMatch(/^usage: node examples\/consumer\/main\.mjs APP \[name=value …\]/)
      const keyless = yield* runMain(["Greeting", "who=Ada"])
      expect(keyless).toEqual({ code: 2, stdout: "", stderr: `APPEXEC_API_KEY is not set.\n${usage}\n` })
    }))

  it.scopedLive("says an error of the API in one line", () =>
    Effect.gen(function*() {
      const { baseUrl, apiKey } = yield* served
      const wrongKey = yield* runMain(["Greeting", "who=Ada"], {
        APPEXEC_BASE_URL: baseUrl,
        APPEXEC_API_KEY: `${apiKey.slice(0, -4)}AAAA`
      })
      expect(wrongKey).toEqual({
        code: 1,
        stdout: "",
        stderr: "consumer: 401 unauthorized: The API key is not valid.\n"
      })
      const unknown = yield* runMain(["Greetings"], { APPEXEC_BASE_URL: baseUrl, APPEXEC_API_KEY: apiKey })
      expect(unknown).toEqual({ code: 1, stdout: "", stderr: "consumer: No app named Greetings.\n" })
    }).pipe(Effect.provide(TestHarness.layer())))
})
