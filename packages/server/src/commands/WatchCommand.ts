/**
 * `appexec executions watch ID [--base-url URL] [--key KEY]`: follows one execution of the key's
 * workspace through the HTTP API, as `appexec run` follows the one it starts — live on stderr,
 * its outputs on stdout at the end, non-zero when it failed. What `run` says when it is stopped
 * (Ctrl-C) names this command, so a run can be followed again from another terminal or later.
 */
import { ClientError, type Polling } from "@appexec/client"
import { Args, Command } from "@effect/cli"
import { Effect } from "effect"
import * as ApiAccess from "../internal/ApiAccess.js"
import * as Follower from "../internal/Follower.js"

/** How the command shows progress. */
export interface WatchCommandOptions {
  /** Polling interval (default the client's: 3–5 s). */
  readonly interval?: Polling.Interval
  /** Redraw the display in place (default: when stderr is a terminal). */
  readonly live?: boolean
}

/** The `watch` command, to add to `appexec executions`. */
export const make = (options: WatchCommandOptions = {}) =>
  Command.make(
    "watch",
    {
      executionId: Args.text({ name: "EXECUTION_ID" }).pipe(
        Args.withDescription("The execution's id, as appexec run printed it")
      ),
      baseUrl: ApiAccess.baseUrl,
      key: ApiAccess.key
    },
    ({ baseUrl, executionId, key }) =>
      Effect.scoped(Effect.gen(function*() {
        const clients = yield* ApiAccess.clients(baseUrl, key)
        const first = yield* ApiAccess.firstRequest(baseUrl, clients, (c) => c.executions.get(executionId)).pipe(
          Effect.catchIf(
            (error) => error instanceof ClientError.ApiError && error.status === 404,
            () =>
              new ApiAccess.RunUsageError({
                message: `No execution ${executionId} in the workspace of this key.`
              })
          )
        )
        const follower = yield* Follower.make({ live: options.live })
        yield* follower.following(executionId, `following execution ${executionId}`)
        yield* follower.onStatus(first)
        const done = yield* follower.around(
          clients.client.executions.wait(executionId, {
            onStatus: follower.onStatus,
            onEvent: follower.onEvent,
            ...(options.interval === undefined ? {} : { interval: options.interval })
          })
        )
        yield* follower.finish(done)
      }))
  ).pipe(
    Command.withDescription(
      "Follow an execution through the HTTP API until it ends (as run does), then print its outputs"
    )
  )

/** `appexec executions watch` with the defaults. */
export const watchCommand = make()
