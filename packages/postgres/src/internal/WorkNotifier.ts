/**
 * The sending side of the work wake-up, for the writes that make work outside the grouped inserts
 * of `PostgresExecutionStore` (which notify in their own statement): after such a write commits,
 * `notify` sends `SELECT pg_notify(<work channel>, '')` in a transaction of its own. Kept out of
 * the write's transaction on purpose: PostgreSQL serialises the commits of every transaction that
 * notifies (one lock for the whole cluster, held through the commit's flush to disk). A
 * notification carries no data and writes nothing, so its commit waits for no flush; and
 * notifications asked for while one is on its way are sent as one after it, since one wakes
 * every listening process all the same. `notifyWebhooks` does the same on the webhook channel,
 * for a due webhook added by a process that may deliver none (a queued execution canceled by an
 * API process): a finished run's webhook wakes the dispatcher of its own process in memory, and
 * waking every dispatcher for it would only send them all claiming the same entry.
 */
import { Context, Effect, Layer, Ref, type Scope } from "effect"
import { sql } from "kysely"
import { PostgresClient, webhookChannel, workChannel } from "../PostgresClient.js"

/** Wakes idle workers in every process. */
export class WorkNotifier extends Context.Tag("@appexec/postgres/WorkNotifier")<
  WorkNotifier,
  {
    /** Sends a notification soon (without waiting for it); requests made meanwhile are sent as one. */
    readonly notify: Effect.Effect<void>
    /** The same for the webhook channel: a due webhook that this process may not deliver itself. */
    readonly notifyWebhooks: Effect.Effect<void>
  }
>() {}

/** A coalescing sender of notifications on `channel`; a notification under way finishes in `scope`. */
const sender = (client: PostgresClient["Type"], scope: Scope.Scope, channel: string, what: string) =>
  Effect.gen(function*() {
    const state = yield* Ref.make({ sending: false, again: false })
    const send = client
      .execute(`notify ${what}`, (db) => sql`SELECT pg_notify(${channel}, '')`.execute(db))
      .pipe(Effect.catchAll((error) => Effect.logWarning(`${what} notification not sent; polling instead`, error)))
    // Sends until no request came in while the last one was under way.
    const drain: Effect.Effect<void> = Effect.zipRight(
      send,
      Effect.flatMap(
        Ref.modify(
          state,
          (s) => s.again ? [true, { sending: true, again: false }] : [false, { sending: false, again: false }]
        ),
        (again) => (again ? drain : Effect.void)
      )
    )
    return Effect.flatMap(
      Ref.modify(
        state,
        (s) => s.sending ? [false, { sending: true, again: true }] : [true, { sending: true, again: false }]
      ),
      (start) => (start ? Effect.asVoid(Effect.forkIn(drain, scope)) : Effect.void)
    )
  })

/** The notifier over the instance's pool; a notification under way is finished when the layer closes. */
export const layer = Layer.scoped(
  WorkNotifier,
  Effect.gen(function*() {
    const client = yield* PostgresClient
    const scope = yield* Effect.scope
    return WorkNotifier.of({
      notify: yield* sender(client, scope, workChannel(client.schema), "work"),
      notifyWebhooks: yield* sender(client, scope, webhookChannel(client.schema), "webhook")
    })
  })
)
