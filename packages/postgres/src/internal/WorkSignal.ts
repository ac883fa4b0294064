/**
 * The wake-up of idle workers and webhook dispatchers across processes: a connection of its own
 * `LISTEN`s on the work channel of the schema, which every process notifies when it inserts an
 * execution or releases one, and on the webhook channel, notified when a process that may deliver
 * no webhooks adds a due one (`WorkNotifier`). This process's own inserts wake its workers the
 * same way, so every change wakes once. A notification resumes the waiting claim loop directly
 * (no timer, no poll). When the listening connection drops it is opened again (every second
 * until it is back), and the reconnection itself wakes both, since notifications sent meanwhile
 * reached no one.
 *
 * The same connection listens on the live channel, whose notifications carry the ids of
 * executions with news for their event streams (`PostgresExecutionReports`); they are handed to
 * every subscriber of `announced`. Announcements sent while the connection was down are lost (no
 * id stands for "every execution"): a stream hears of such an execution again at its next
 * announcement, or when this process next looks at it.
 */
import { ExecutionId } from "@appexec/api/Ids"
import { Errors } from "@appexec/core"
import { Context, Deferred, Duration, Effect, Layer, PubSub, Queue, Schema, type Scope, Stream } from "effect"
import type pg from "pg"
import { liveChannel, PostgresClient, webhookChannel, workChannel } from "../PostgresClient.js"
import { loadPg } from "./Driver.js"

/** A signal that work may have become claimable. */
export class WorkSignal extends Context.Tag("@appexec/postgres/WorkSignal")<
  WorkSignal,
  {
    /** Completes at the next work notification (from any process), or at once if one is pending. */
    readonly wait: Effect.Effect<void>
    /** Completes at the next webhook notification (from any process), or at once if one is pending. */
    readonly webhooks: Effect.Effect<void>
    /** The execution ids of the live channel's notifications (from any process, this one too), as they come. */
    readonly announced: Stream.Stream<ExecutionId>
  }
>() {}

/** Most announced ids held for a subscriber that has not taken them yet. */
const LIVE_BACKLOG = 4096

const isExecutionId = Schema.is(ExecutionId)

interface Listening {
  /** Completes when the connection ends, for whatever reason. */
  readonly ended: Deferred.Deferred<void>
  readonly client: pg.Client
}

/** Opens a connection that `LISTEN`s on `channels`; a notification calls `wake` with its channel and payload. */
const listen = (
  config: pg.ClientConfig,
  channels: ReadonlyArray<string>,
  wake: (channel: string, payload: string | undefined) => void
) =>
  Effect.gen(function*() {
    const ended = yield* Deferred.make<void>()
    const client = new (loadPg().Client)(config)
    const end = () => Deferred.unsafeDone(ended, Effect.void)
    client.on("error", end)
    client.on("end", end)
    client.on("notification", (message) => wake(message.channel, message.payload))
    yield* Effect.tryPromise({
      try: async () => {
        await client.connect()
        for (const channel of channels) await client.query(`LISTEN ${client.escapeIdentifier(channel)}`)
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
    const work = yield* Queue.sliding<void>(1)
    const webhooks = yield* Queue.sliding<void>(1)
    // A subscriber that falls this far behind loses the oldest ids rather than holding memory.
    const live = yield* Effect.acquireRelease(PubSub.sliding<ExecutionId>(LIVE_BACKLOG), PubSub.shutdown)
    const channels = [workChannel(client.schema), webhookChannel(client.schema), liveChannel(client.schema)]
    const wake = (channel: string, payload: string | undefined) => {
      if (channel === channels[2]) {
        // Ids this schema's processes sent; anything else in the payload is not an id and is skipped.
        for (const id of (payload ?? "").split(",")) {
          if (isExecutionId(id)) live.unsafeOffer(id)
        }
        return
      }
      Queue.unsafeOffer(channel === channels[1] ? webhooks : work, undefined)
    }
    const wakeBoth = () => {
      Queue.unsafeOffer(work, undefined)
      Queue.unsafeOffer(webhooks, undefined)
    }
    const config = {
      ...client.connectionConfig,
      application_name: `${client.connectionConfig.application_name} listen`
    }

    // The first `LISTEN` is in place before the layer is: no insert after it goes unheard.
    const first = yield* Effect.acquireRelease(listen(config, channels, wake), close)
    const reconnect = listen(config, channels, wake).pipe(
      Effect.tapError((error) =>
        Effect.logWarning("work notifications: cannot listen; trying again in a second", error).pipe(
          Effect.zipRight(Effect.sleep(Duration.seconds(1)))
        )
      ),
      Effect.eventually,
      // Work inserted while no connection listened notified no one.
      Effect.tap(() => Effect.sync(wakeBoth))
    )
    const loop = (listening: Listening): Effect.Effect<never, never, Scope.Scope> =>
      Deferred.await(listening.ended).pipe(
        Effect.zipRight(close(listening)),
        Effect.zipRight(Effect.logWarning("work notifications: the listening connection dropped; reconnecting")),
        Effect.zipRight(Effect.acquireRelease(reconnect, close)),
        Effect.flatMap(loop)
      )
    yield* Effect.forkScoped(Effect.scoped(loop(first)))
    return WorkSignal.of({
      wait: Queue.take(work),
      webhooks: Queue.take(webhooks),
      announced: Stream.fromPubSub(live)
    })
  })
)
