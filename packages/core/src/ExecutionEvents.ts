/**
 * In-process notifications of execution transitions, for `await` and for logging.
 */
import { Context, Effect, Layer, PubSub, type Queue, type Scope } from "effect"
import type { ExecutionRecord } from "./ExecutionRecord.js"

/** Transitions of executions run in this process, as they are stored. */
export class ExecutionEvents extends Context.Tag("@appexec/core/ExecutionEvents")<
  ExecutionEvents,
  {
    /** Announces a stored transition. */
    readonly publish: (record: ExecutionRecord) => Effect.Effect<void>
    /** A subscription to transitions from now on; ends with the scope. */
    readonly subscribe: Effect.Effect<Queue.Dequeue<ExecutionRecord>, never, Scope.Scope>
  }
>() {
  /** An unbounded in-process hub. */
  static readonly layer = Layer.effect(
    ExecutionEvents,
    Effect.map(PubSub.unbounded<ExecutionRecord>(), (hub) => ({
      publish: (record) => PubSub.publish(hub, record).pipe(Effect.asVoid),
      subscribe: PubSub.subscribe(hub)
    }))
  )
}
