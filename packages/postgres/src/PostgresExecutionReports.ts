/**
 * `ExecutionReports` on PostgreSQL: the dialect-neutral reports of `@appexec/sql`
 * (`SqlExecutionReports`), and the news of executions between processes over `LISTEN/NOTIFY`.
 * `announce` sends the execution's id on the live channel of the schema (`liveChannel`), in a
 * statement of its own, never inside a write's transaction (PostgreSQL serialises the commits of
 * notifying transactions), and without waiting for it; ids announced while a notification is on
 * its way are sent together after it, joined by commas. `announced` is what the storage's
 * listening connection hears on that channel (`WorkSignal`), this process's own ids included.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { ExecutionReports } from "@appexec/core"
import { SqlExecutionReports } from "@appexec/sql"
import { Effect, Layer, type Scope } from "effect"
import { sql } from "kysely"
import { WorkSignal } from "./internal/WorkSignal.js"
import { liveChannel, PostgresClient } from "./PostgresClient.js"

/** Longest payload of one notification: PostgreSQL refuses 8000 bytes and more. */
const PAYLOAD_LIMIT = 7999

/**
 * A coalescing sender of execution ids on `channel`: one notification at a time, each carrying
 * every id asked for meanwhile (once each) that fits; a notification under way finishes in `scope`.
 */
const announcer = (client: PostgresClient["Type"], scope: Scope.Scope, channel: string) => {
  const pending = new Set<string>()
  let sending = false
  /** The next payload, its ids taken from `pending`. Ids are UUIDs: one byte per character. */
  const nextPayload = () => {
    let payload = ""
    for (const id of pending) {
      if (payload !== "" && payload.length + 1 + id.length > PAYLOAD_LIMIT) break
      payload = payload === "" ? id : `${payload},${id}`
      pending.delete(id)
    }
    return payload
  }
  const send = (payload: string) =>
    client
      .execute("announce executions", (db) => sql`SELECT pg_notify(${channel}, ${payload})`.execute(db))
      .pipe(Effect.catchAll((error) => Effect.logWarning("live notification not sent", error)))
  // Sends until no id is left.
  const drain: Effect.Effect<void> = Effect.suspend(() => {
    if (pending.size === 0) {
      sending = false
      return Effect.void
    }
    return Effect.zipRight(send(nextPayload()), drain)
  })
  return (executionId: ExecutionId): Effect.Effect<void> =>
    Effect.suspend(() => {
      pending.add(executionId)
      if (sending) return Effect.void
      sending = true
      return Effect.asVoid(Effect.forkIn(drain, scope))
    })
}

/** The reports over the instance's pool and listening connection; an announcement under way finishes when the layer closes. */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const signal = yield* WorkSignal
  const neutral = yield* SqlExecutionReports.make
  const scope = yield* Effect.scope
  const service: ExecutionReports.ExecutionReports["Type"] = {
    ...neutral,
    announce: announcer(client, scope, liveChannel(client.schema)),
    announced: signal.announced
  }
  return service
})

/** Layer of the reports; needs the pool, the runner and the listening connection (see `PostgresStorage`). */
export const layer = Layer.scoped(ExecutionReports.ExecutionReports, make)
