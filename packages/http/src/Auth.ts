/**
 * The authentication middleware over the `Appexec` facade: the key is read from `x-api-key`,
 * else `Authorization: Bearer`, its prefix checked and looked up by hash (core's
 * `keys.authenticate`). Missing, malformed, unknown and revoked keys answer 401.
 */
import { Appexec } from "@appexec/core"
import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Unauthenticated } from "@appexec/api/ApiError"
import { Authentication } from "@appexec/api/Authentication"

/** The `Authentication` middleware, for both security schemes of the API. */
export const layer = Layer.effect(
  Authentication,
  Effect.gen(function* () {
    const appexec = yield* Appexec.Appexec
    const authenticate = HttpServerRequest.HttpServerRequest.pipe(
      Effect.flatMap((request) =>
        appexec.keys.authenticate({
          "x-api-key": request.headers["x-api-key"],
          authorization: request.headers["authorization"]
        })
      ),
      Effect.catchTags({
        Unauthorized: (error) => Effect.fail(new Unauthenticated({ error: { code: "unauthorized", message: error.message } })),
        StorageError: (error) => Effect.die(error)
      })
    )
    // Both schemes read the same headers, with `x-api-key` first, as core decides.
    return { apiKey: () => authenticate, bearer: () => authenticate }
  })
)
