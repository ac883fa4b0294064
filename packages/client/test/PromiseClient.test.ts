import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit } from "effect"
import { ClientError, createClient, Outputs, PromiseClient } from "../src/index.js"
import { instance, serve } from "./ServedInstance.js"

describe("the Promise client", () => {
  it.scoped("runs the same implementation and rejects with the client's own error classes", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const appexec = createClient({ baseUrl: `${served.baseUrl}/`, apiKey: served.apiKey })
      const apps = yield* Effect.promise(() => appexec.apps.list())
      expect(apps.map((a) => a.name).sort()).toEqual(["Greeting", "Parse"])

      // The parse app has no delay: polling with no interval ends at once in virtual time.
      const done = yield* Effect.promise(() => appexec.run(served.parseAppId, { text: "{\"a\":1}" }, { interval: 0 }))
      expect(done.status).toBe("completed")
      const parsed = Outputs.read(done, "Parsed")
      expect(parsed).toMatchObject({ kind: "json", value: { a: 1 } })

      const rejected = yield* Effect.either(
        Effect.tryPromise(() => appexec.apps.get("00000000-0000-4000-8000-000000000000"))
      )
      const cause = Either.isLeft(rejected) ? rejected.left.cause : undefined
      expect(cause).toBeInstanceOf(ClientError.ApiError)
      expect(cause).toBeInstanceOf(Error)
      expect(cause).toMatchObject({ status: 404, code: "not_found" })
    }).pipe(Effect.provide(instance)))

  it.effect("rejects with the failure itself, not a wrapper", () =>
    Effect.gen(function*() {
      const error = new ClientError.WaitError({ reason: "aborted", executionId: "e", lastStatus: null })
      const exit = yield* Effect.exit(Effect.tryPromise(() => PromiseClient.runPromise(Effect.fail(error))))
      expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error.cause).toBe(error)
    }))
})
