/**
 * In-process notifications of execution transitions: a broadcast for whoever follows every
 * transition (logging, the webhook dispatcher), and registries of waiters keyed by execution id,
 * so that a transition wakes the waiters of that one execution and nobody else's: those waiting
 * for its end, and those waiting for any change of it (long polls with `If-None-Match`).
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { Context, Deferred, Effect, Exit, FiberId, Layer, PubSub, type Queue, type Scope } from "effect"
import { isTerminal } from "./ExecutionLifecycle.js"
import type { ExecutionRecord } from "./ExecutionRecord.js"

/**
 * A possible change of an execution, as a change waiter follows them: nothing is carried (the
 * waiter reads the execution as stored), only the wait for the one after it, so that a waiter
 * that looks and finds nothing new misses no change made while it looked.
 */
export interface Change {
  readonly next: Effect.Effect<Change>
}

/** Transitions of executions run in this process, as they are stored. */
export class ExecutionEvents extends Context.Tag("@appexec/core/ExecutionEvents")<
  ExecutionEvents,
  {
    /** Announces a stored transition, and wakes the waiters of the execution when it is terminal. */
    readonly publish: (record: ExecutionRecord) => Effect.Effect<void>
    /** `publish`, done now: for a writer that announces many records at once (the worker's saves). */
    readonly unsafePublish: (record: ExecutionRecord) => void
    /** A subscription to every transition from now on; ends with the scope. */
    readonly subscribe: Effect.Effect<Queue.Dequeue<ExecutionRecord>, never, Scope.Scope>
    /**
     * Registers a waiter for the end of `executionId`; the returned effect completes with the first
     * terminal record published (or `settle`d) for it after the registration. The registration is
     * removed when the scope closes, interrupted or not.
     */
    readonly awaitTerminal: (
      executionId: ExecutionId
    ) => Effect.Effect<Effect.Effect<ExecutionRecord>, never, Scope.Scope>
    /**
     * `awaitTerminal` without a scope, for waits that many fibers make at once: registers at once
     * and answers the wait and the function that removes the registration (call it once).
     */
    readonly unsafeAwaitTerminal: (executionId: ExecutionId) => {
      readonly wait: Effect.Effect<ExecutionRecord>
      readonly release: () => void
    }
    /**
     * Registers a waiter for changes of `executionId`, without a scope (many wait at once):
     * `next` completes at the first transition published (or `changed`) for it after the
     * registration, and each `Change` leads to the one after it. `release` removes the
     * registration (call it once).
     */
    readonly unsafeAwaitChange: (executionId: ExecutionId) => {
      readonly next: Effect.Effect<Change>
      readonly release: () => void
    }
    /**
     * Calls `listener` at every transition published (or `changed`) for `executionId` from now on,
     * synchronously, until the answered function is called (once). For followers that last (an
     * event stream): no effect, fiber or deferred per change.
     */
    readonly unsafeListen: (executionId: ExecutionId, listener: () => void) => () => void
    /** The executions that have waiters now (for their end). */
    readonly waited: Effect.Effect<ReadonlyArray<ExecutionId>>
    /** The executions that have change waiters or listeners now. */
    readonly watched: Effect.Effect<ReadonlyArray<ExecutionId>>
    /**
     * Wakes the change waiters of an execution that may have changed some other way (a look at
     * the store, for executions that another process runs), without announcing it to subscribers.
     */
    readonly changed: (executionId: ExecutionId) => Effect.Effect<void>
    /**
     * Wakes the waiters of a terminal record learnt some other way (a look at the store, for
     * executions that another process ran), without announcing it to subscribers.
     */
    readonly settle: (record: ExecutionRecord) => Effect.Effect<void>
  }
>() {
  /** An unbounded in-process hub and a waiter registry. */
  static readonly layer = Layer.effect(
    ExecutionEvents,
    Effect.map(PubSub.unbounded<ExecutionRecord>(), (hub) => {
      /** One deferred per waited execution, shared by all its waiters, with their count. */
      const waiters = new Map<string, { readonly done: Deferred.Deferred<ExecutionRecord>; count: number }>()
      /**
       * Per watched execution, the change not yet come (a chain: each completed change holds the
       * next), with the count of its waiters; the entry lives while it has waiters.
       */
      const watchers = new Map<ExecutionId, { pending: Deferred.Deferred<Change>; count: number }>()
      /** Per listened execution, its listeners. */
      const listeners = new Map<ExecutionId, Set<() => void>>()
      const unsafeListen = (executionId: ExecutionId, listener: () => void) => {
        let set = listeners.get(executionId)
        if (set === undefined) listeners.set(executionId, set = new Set())
        // Each registration is its own entry, so the same function may listen twice.
        const entry = () => listener()
        set.add(entry)
        return () => {
          set.delete(entry)
          if (set.size === 0 && listeners.get(executionId) === set) listeners.delete(executionId)
        }
      }
      const unsafeChanged = (executionId: ExecutionId) => {
        const listening = listeners.get(executionId)
        if (listening !== undefined) { for (const listener of [...listening]) listener() }
        const entry = watchers.get(executionId)
        if (entry === undefined) return
        const done = entry.pending
        entry.pending = Deferred.unsafeMake<Change>(FiberId.none)
        Deferred.unsafeDone(done, Exit.succeed({ next: Deferred.await(entry.pending) }))
      }
      const unsafeAwaitChange = (executionId: ExecutionId) => {
        let entry = watchers.get(executionId)
        if (entry === undefined) {
          entry = { pending: Deferred.unsafeMake<Change>(FiberId.none), count: 0 }
          watchers.set(executionId, entry)
        }
        entry.count += 1
        const registered = entry
        let released = false
        return {
          next: Deferred.await(registered.pending),
          release: () => {
            if (released) return
            released = true
            registered.count -= 1
            if (registered.count === 0 && watchers.get(executionId) === registered) watchers.delete(executionId)
          }
        }
      }
      const unsafeSettle = (record: ExecutionRecord) => {
        if (!isTerminal(record.status)) return
        const entry = waiters.get(record.executionId)
        if (entry === undefined) return
        waiters.delete(record.executionId)
        Deferred.unsafeDone(entry.done, Exit.succeed(record))
      }
      const settle = (record: ExecutionRecord) =>
        Effect.sync(() => {
          unsafeSettle(record)
          unsafeChanged(record.executionId)
        })
      const unsafeAwaitTerminal = (executionId: ExecutionId) => {
        let entry = waiters.get(executionId)
        if (entry === undefined) {
          entry = { done: Deferred.unsafeMake<ExecutionRecord>(FiberId.none), count: 0 }
          waiters.set(executionId, entry)
        }
        entry.count += 1
        const registered = entry
        let released = false
        return {
          wait: Deferred.await(registered.done),
          release: () => {
            if (released) return
            released = true
            registered.count -= 1
            if (registered.count === 0 && waiters.get(executionId) === registered) waiters.delete(executionId)
          }
        }
      }
      const awaitTerminal = (executionId: ExecutionId) =>
        Effect.acquireRelease(
          Effect.sync(() => unsafeAwaitTerminal(executionId)),
          (registration) => Effect.sync(registration.release)
        ).pipe(Effect.map((registration) => registration.wait))
      const unsafePublish = (record: ExecutionRecord) => {
        hub.unsafeOffer(record)
        unsafeSettle(record)
        unsafeChanged(record.executionId)
      }
      return {
        // One step per transition: the hub is unbounded (an offer never waits) and waking the
        // waiters is synchronous. With no subscriber the offer is dropped at once.
        publish: (record) => Effect.sync(() => unsafePublish(record)),
        unsafePublish,
        subscribe: PubSub.subscribe(hub),
        awaitTerminal,
        unsafeAwaitTerminal,
        unsafeAwaitChange,
        waited: Effect.sync(() => [...waiters.keys()] as Array<ExecutionId>),
        watched: Effect.sync(() => [...new Set([...watchers.keys(), ...listeners.keys()])]),
        unsafeListen,
        changed: (executionId) => Effect.sync(() => unsafeChanged(executionId)),
        settle
      }
    })
  )
}
