import { Appexec } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { AppexecClient, ClientError, createClient, Outputs } from "../src/index.js"
import { instance, parseApp, serve } from "./ServedInstance.js"

/** Imports the parse app once more under `name`, as a public app. */
const importAs = (name: string) =>
  Effect.flatMap(Appexec.Appexec, (appexec) => appexec.apps.import({ ...parseApp, name }, { owner: { public: true } }))
    .pipe(
      Effect.map((app) => app.appId),
      Effect.orDie
    )

describe("run by app name, as `appexec run APP` does", () => {
  it.scoped("finds the app by its exact name, else by its name in any case, and runs it", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* AppexecClient.make({ baseUrl: served.baseUrl, apiKey: served.apiKey })
      expect(yield* client.apps.resolve("Parse")).toBe(served.parseAppId)
      expect(yield* client.apps.resolve("parse")).toBe(served.parseAppId)
      // An id is taken as it is, without a search.
      expect(yield* client.apps.resolve(served.greetingAppId)).toBe(served.greetingAppId)

      // onStarted hears the started execution once, before the wait: its id, to follow it again.
      const heard: Array<string> = []
      const done = yield* client.run("PARSE", { text: "[3]" }, {
        interval: 0,
        onStarted: (started) => void heard.push(`${started.executionId} ${started.status}`),
        onStatus: (execution) => void heard.push(execution.status)
      })
      expect(done.status).toBe("completed")
      expect(heard[0]).toBe(`${done.executionId} queued`)
      expect(heard.slice(1)).not.toContain(expect.stringContaining(done.executionId))
      expect(Outputs.read(done, "Parsed")).toMatchObject({ kind: "json", value: [3] })

      // An exact match wins over matches in another case.
      const upper = yield* importAs("PARSE")
      expect(yield* client.apps.resolve("PARSE")).toBe(upper)
      expect(yield* client.apps.resolve("Parse")).toBe(served.parseAppId)
    }).pipe(Effect.provide(instance)))

  it.scoped("fails with AppNameError when no app, or several, have the name", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* AppexecClient.make({ baseUrl: served.baseUrl, apiKey: served.apiKey })

      const unknown = yield* Effect.flip(client.run("Nonesuch", {}))
      expect(unknown).toBeInstanceOf(ClientError.AppNameError)
      expect(unknown).toMatchObject({ _tag: "AppNameError", app: "Nonesuch", reason: "unknown", matches: [] })
      expect(unknown.message).toBe("No app is named 'Nonesuch'. GET /v1/apps lists the apps this key can run.")

      // "Parse" in another case twice: neither is exact for "parse".
      const first = yield* importAs("PARSE")
      const ambiguous = yield* Effect.flip(client.apps.resolve("parse"))
      expect(ambiguous).toMatchObject({ _tag: "AppNameError", reason: "ambiguous" })
      if (ambiguous._tag !== "AppNameError") return
      expect(ambiguous.matches.map((a) => a.appId).sort()).toEqual([served.parseAppId, first].sort())
      expect(ambiguous.message).toBe(
        `2 apps are named 'parse'; give its id instead: ${ambiguous.matches.map((a) => a.appId).join(", ")}.`
      )

      // A name that only a description holds is no match.
      expect((yield* Effect.flip(client.apps.resolve("JSON")))._tag).toBe("AppNameError")
    }).pipe(Effect.provide(instance)))

  it.scoped("the Promise client runs by name and rejects with AppNameError", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const appexec = createClient({ baseUrl: served.baseUrl, apiKey: served.apiKey })
      const done = yield* Effect.promise(() => appexec.run("Parse", { text: "\"hi\"" }, { interval: 0 }))
      expect(done.status).toBe("completed")
      const rejected = yield* Effect.either(Effect.tryPromise(() => appexec.run("Nonesuch", {})))
      const cause = Either.isLeft(rejected) ? rejected.left.cause : undefined
      expect(cause).toBeInstanceOf(ClientError.AppNameError)
      expect(cause).toBeInstanceOf(Error)
    }).pipe(Effect.provide(instance)))
})
