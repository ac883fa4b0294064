/**
 * One read of an execution per change, shared by every stream that follows it in this process
 * (`LiveStreams`). A stream reads the execution's view and its reports at each change it hears of;
 * 2,000 streams of one execution that reports progress would read the store 2,000 times per
 * change, and write its snapshot as JSON 2,000 times, each reading what the others read. Here the
 * streams of one execution listen through one registration (`ExecutionEvents.unsafeListen`), which
 * counts the changes; the first stream to read after a change starts the reads, and every stream
 * that reads before the next change joins them: the view, the reports after a given event id, and
 * each event made of them (the same objects, so the wire frames them once too), and what a stream
 * makes of them from its place in the execution (its step, the same for every stream at that
 * place: streams that follow along are all at one place). A read started
 * before a change is never given to a stream that heard of the change: it starts afresh.
 *
 * Each shared read runs in a fiber of its own (supervised by the instance's scope), so a stream
 * that goes away while it waits does not interrupt it for the others.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { Effect, Fiber, FiberSet, type Option, type Scope } from "effect"
import type { StorageError } from "../../Errors.js"
import { ExecutionEvents } from "../../ExecutionEvents.js"
import type { ExecutionView } from "../../ExecutionRecord.js"
import type { ReportsAfter, StoredReport } from "../../ExecutionReports.js"

/** How the reads are made, once each per change: what `LiveStreams` reads and makes of it. */
export interface Sources<Event> {
  readonly view: (executionId: ExecutionId) => Effect.Effect<Option.Option<ExecutionView>, StorageError>
  readonly after: (executionId: ExecutionId, lastId: number) => Effect.Effect<ReportsAfter, StorageError>
  /** The snapshot event of `view` with id `id` (it may read the queue position). */
  readonly snapshot: (view: ExecutionView, id: number) => Effect.Effect<Event, StorageError>
  readonly reportEvent: (stored: StoredReport) => Event
}

/**
 * The reads of one execution since its last change, each made once for every stream; and what
 * streams make of them (`Made`, failing with `MadeError`), once per place in the execution.
 */
export interface Read<Event, Made, MadeError> {
  readonly view: Effect.Effect<Option.Option<ExecutionView>, StorageError>
  readonly after: (lastId: number) => Effect.Effect<ReportsAfter, StorageError>
  readonly snapshot: (view: ExecutionView, id: number) => Effect.Effect<Event, StorageError>
  readonly reportEvent: (stored: StoredReport) => Event
  /**
   * `make()` of `key`, made once for every stream that asks with the same key: what a stream makes
   * of the reads, the same for every stream at the same place in the execution.
   */
  readonly shared: (key: string, make: () => Effect.Effect<Made, MadeError>) => Effect.Effect<Made, MadeError>
}

/** One stream's hold on the shared reads of an execution. */
export interface Watch<Event, Made, MadeError> {
  /** The reads since the last change heard: the same for every stream until the next change. */
  readonly read: () => Read<Event, Made, MadeError>
  /** Stops the stream's hold: the last one stops listening to the execution. Once. */
  readonly close: () => void
}

/** The shared state of one followed execution. */
interface Entry<Event, Made, MadeError> {
  /** The changes heard since the first stream came. */
  changes: number
  holders: number
  /** The reads, and the count of changes when they began. */
  current: { readonly at: number; readonly read: Read<Event, Made, MadeError> } | undefined
  readonly listeners: Set<() => void>
  readonly unlisten: () => void
}

/** The shared reads over `sources`, for the executions this process follows, until the scope closes. */
export const make = <Event, Made, MadeError>(
  sources: Sources<Event>
): Effect.Effect<
  (executionId: ExecutionId, onChange: () => void) => Watch<Event, Made, MadeError>,
  never,
  ExecutionEvents | Scope.Scope
> =>
  Effect.gen(function*() {
    const events = yield* ExecutionEvents
    const run = yield* FiberSet.makeRuntime<never>()
    const entries = new Map<ExecutionId, Entry<Event, Made, MadeError>>()

    /**
     * `effect`, run once in a fiber of its own at the first call; every call has its exit, at once
     * when it is over, else when it is (`Fiber.await`, not `Fiber.join`: a read has no fiber refs
     * for 2,000 callers to inherit).
     */
    const once = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> => {
      let fiber: Fiber.RuntimeFiber<A, E> | undefined
      return Effect.suspend(() => {
        fiber ??= run(effect)
        return fiber.unsafePoll() ?? Effect.flatten(Fiber.await(fiber))
      })
    }

    /** `f` of a key, made once per key. */
    const memo = <K, A>(f: (key: K) => A): (key: K) => A => {
      const made = new Map<K, A>()
      return (key) => {
        if (made.has(key)) return made.get(key)!
        const value = f(key)
        made.set(key, value)
        return value
      }
    }

    const readOf = (executionId: ExecutionId): Read<Event, Made, MadeError> => {
      const snapshots = new Map<ExecutionView, (id: number) => Effect.Effect<Event, StorageError>>()
      const made = new Map<string, Effect.Effect<Made, MadeError>>()
      return {
        shared: (key, make) => {
          let effect = made.get(key)
          if (effect === undefined) made.set(key, effect = once(make()))
          return effect
        },
        view: once(sources.view(executionId)),
        after: memo((lastId: number) => once(sources.after(executionId, lastId))),
        snapshot: (view, id) => {
          let of = snapshots.get(view)
          if (of === undefined) snapshots.set(view, of = memo((id: number) => once(sources.snapshot(view, id))))
          return of(id)
        },
        reportEvent: memo(sources.reportEvent)
      }
    }

    return (executionId, onChange) => {
      let entry = entries.get(executionId)
      if (entry === undefined) {
        const listeners = new Set<() => void>()
        const created: Entry<Event, Made, MadeError> = {
          changes: 0,
          holders: 0,
          current: undefined,
          listeners,
          // Counted before any stream hears of it, so a stream that reads then starts afresh.
          unlisten: events.unsafeListen(executionId, () => {
            created.changes += 1
            created.current = undefined
            for (const listener of listeners) listener()
          })
        }
        entries.set(executionId, entry = created)
      }
      const held = entry
      // Each registration is its own entry, so the same function may listen twice.
      const listener = () => onChange()
      held.holders += 1
      held.listeners.add(listener)
      let closed = false
      return {
        read: () => {
          if (held.current === undefined || held.current.at !== held.changes) {
            held.current = { at: held.changes, read: readOf(executionId) }
          }
          return held.current.read
        },
        close: () => {
          if (closed) return
          closed = true
          held.listeners.delete(listener)
          held.holders -= 1
          if (held.holders === 0) {
            held.unlisten()
            if (entries.get(executionId) === held) entries.delete(executionId)
          }
        }
      }
    }
  })
