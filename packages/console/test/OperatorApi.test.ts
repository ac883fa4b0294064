/**
 * The operator views' client (`makeOperatorApi`) and the workspace console's read their error
 * answers with one `errorOf`: against a real admin port, a refused action is an `ApiError` with
 * the server's code and message; an answer that is not the error shape says who answered.
 */
import { AdminHttp } from "@appexec/http"
import { NodeListener } from "@appexec/platform-node"
import { TestHarness, TestHttpServer } from "@appexec/testing"
import { afterEach, describe, expect, it, vi } from "@effect/vitest"
import { Effect } from "effect"
import { ApiError, errorOf } from "../src/app/api/Api.js"
import { makeOperatorApi } from "../src/app/api/OperatorApi.js"

/** The read-only admin app with the operator views on 127.0.0.1, port 0; its base URL. */
const serveAdmin = Effect.gen(function*() {
  const { origin, server } = yield* TestHttpServer.listening
  server.on("request", NodeListener.fromApp(yield* AdminHttp.withOperator({ console: false })))
  return origin
})

const refusal = (promise: Promise<unknown>) =>
  Effect.promise(() => promise.then(() => undefined, (error: unknown) => error))

describe("the operator views' client", () => {
  afterEach(() => {
    vi.unstubAllGlobals()
  })

  it.scoped("reads a refused action of a real admin port as the server's code and message", () =>
    Effect.gen(function*() {
      const api = makeOperatorApi(yield* serveAdmin)
      expect(yield* Effect.promise(() => api.settings())).toEqual({ actions: false })
      const refused = yield* refusal(api.redeliver("00000000-0000-4000-8000-000000000000"))
      expect(refused).toBeInstanceOf(ApiError)
      expect(refused).toMatchObject({ status: 403, code: "forbidden" })
      expect((refused as ApiError).message).toContain("--admin-actions")
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

  it.effect("keeps an error's details, and says who answered when the body is not the error shape", () =>
    Effect.gen(function*() {
      const answers = [
        Response.json({ error: { code: "invalid_request", message: "No.", details: [{ at: "limit" }] } }, {
          status: 400
        }),
        new Response("<html>Bad gateway</html>", { status: 502, headers: { "content-type": "text/html" } }),
        Response.json({ error: null }, { status: 500 })
      ]
      vi.stubGlobal("fetch", () => Promise.resolve(answers.shift()))
      const api = makeOperatorApi("http://admin.test")
      expect(yield* refusal(api.deliveries())).toMatchObject({
        status: 400,
        code: "invalid_request",
        message: "No.",
        details: [{ at: "limit" }]
      })
      expect(yield* refusal(api.workers())).toMatchObject({
        status: 502,
        code: "unknown",
        message: "The admin port answered 502."
      })
      expect(yield* refusal(api.throughput())).toMatchObject({
        status: 500,
        code: "unknown",
        message: "The admin port answered 500."
      })
      // The workspace console's client reads them alike, in its own words.
      const plain = yield* Effect.promise(() => errorOf(new Response("oops", { status: 503 })))
      expect(plain).toMatchObject({ status: 503, code: "unknown", message: "The server answered 503." })
    }))
})
