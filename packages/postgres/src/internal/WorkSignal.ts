/**
 * The wake-up of idle workers across processes: a connection of its own `LISTEN`s on the work
 * channel of the schema, which every process notifies after it inserts an execution
 * (`WorkNotifier`) or releases one. This process's own inserts wake its workers the same way, so
 * every change wakes once. When the listening connection drops it is
 * opened again (every second until it is back), and the reconnection itself wakes the workers,
 * since notifications sent meanwhile reached no one.
 */
import { Errors } from "@appexec/core"
import { Context, Deferred, Duration, Effect, Layer, Queue, type Scope } from "effect"
import type pg from "pg"
import { PostgresClient, workChannel } from "../PostgresClient.js"
import { loadPg } from "./Driver.js"

/** A signal that work may have become claimable. */
export class WorkSignal extends Context.Tag("@appexec/postgres/WorkSignal")<
  WorkSignal,
  {
    /** Completes at the next notification (from any process), or at once if one is pending. */
    readonly wait: Effect.Effect<void>
  }
>() {}

interface Listening {
  /** Completes when the connection ends, for whatever reason. */
  readonly ended: Deferred.Deferred<void>
  readonly client: pg.Client
}

/** Opens a connection that `LISTEN`s on `channel`; every notification calls `wake`. */
const listen = (config: pg.ClientConfig, channel: string, wake: () => void) =>
  Effect.gen(function*() {
    const ended = yield* Deferred.make<void>()
    const client = new (loadPg().Client)(config)
    const end = () => Deferred.unsafeDone(ended, Effect.void)
    client.on("error", end)
    client.on("end", end)
    client.on("notification", wake)
    yield* Effect.tryPromise({
      try: async () => {
        await client.connect()
        await client.query(`LISTEN ${client.escapeIdentifier(channel)}`)
      },
      catch: (cause) => new Errors.StorageError({ operation: "listen for work", cause })
    }).pipe(Effect.tapError(() => Effect.promise(() => client.end().catch(() => undefined))))
    return { ended, client } satisfies Listening
  })

const close = (listening: Listening) => Effect.promise(() => listening.client.end().catch(() => undefined))

/** The signal over a listening connection of its own; the connection closes with the layer. */
export const layer = Layer.scoped(
  WorkSignal,
  Effect.gen(function*() {
    const client = yield* PostgresClient
    const queue = yield* Queue.sliding<void>(1)
    const wake = () => void Queue.unsafeOffer(queue, undefined)
    const channel = workChannel(client.schema)
    const config = {
      ...client.connectionConfig,
      application_name: `${client.connectionConfig.application_name} listen`
    }

    // The first `LISTEN` is in place before the layer is: no insert after it goes unheard.
    const first = yield* Effect.acquireRelease(listen(config, channel, wake), close)
    const reconnect = listen(config, channel, wake).pipe(
      Effect.tapError((error) =>
        Effect.logWarning("work notifications: cannot listen; trying again in a second", error).pipe(
          Effect.zipRight(Effect.sleep(Duration.seconds(1)))
        )
      ),
      Effect.eventually,
      // Work inserted while no connection listened notified no one.
      Effect.tap(() => Effect.sync(wake))
    )
    const loop = (listening: Listening): Effect.Effect<never, never, Scope.Scope> =>
      Deferred.await(listening.ended).pipe(
        Effect.zipRight(close(listening)),
        Effect.zipRight(Effect.logWarning("work notifications: the listening connection dropped; reconnecting")),
        Effect.zipRight(Effect.acquireRelease(reconnect, close)),
        Effect.flatMap(loop)
      )
    yield* Effect.forkScoped(Effect.scoped(loop(first)))
    return WorkSignal.of({ wait: Queue.take(queue) })
  })
)
