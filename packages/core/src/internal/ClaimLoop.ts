/**
 * The claim loop shared by every consumer of a queue (the worker's executions, the webhook
 * dispatcher's deliveries): it claims as many items as it has free slots (up to a batch) in one
 * claim, and starts each in a fiber of its own, supervised by a `FiberSet` that interrupts what
 * still runs when the scope closes (as `cluster`'s `Sharding` does). The fibers are forked from
 * plain code with a runtime taken once, each with the log annotations of its item set as it is
 * made (not through `Effect.annotateLogs`, which copies the fiber refs twice each time).
 */
import { Effect, Fiber, FiberRef, FiberRefs, FiberSet, HashMap, Queue, type Scope } from "effect"

/** One item's work, made when it is claimed. */
export interface Work {
  /** What runs in the item's fiber. */
  readonly effect: Effect.Effect<void>
  /** Told the item's fiber once it is forked. */
  readonly forked?: ((fiber: Fiber.RuntimeFiber<void>) => void) | undefined
}

/** What a consumer gives the loop. */
export interface Options<A> {
  /** Most items under way at once. */
  readonly slots: number
  /** Most items one claim takes. */
  readonly batch: number
  /** Claims up to `n` items; a failure is the consumer's to log and answer with none. */
  readonly claim: (n: number) => Effect.Effect<ReadonlyArray<A>>
  /**
   * The work of a claimed item, made synchronously as it is started. `freeSlot` gives the slot
   * back before the fiber ends (once; it is given back when the fiber ends otherwise).
   */
  readonly work: (item: A, freeSlot: () => void) => Work
  /** The log annotations of an item's fiber. */
  readonly annotations: (item: A) => Readonly<Record<string, unknown>>
  /**
   * The wait after a claim that took fewer items than it asked for (nothing more to claim for
   * now); `slotFreed` completes when a slot is given back.
   */
  readonly idle: (slotFreed: Effect.Effect<void>) => Effect.Effect<void>
  /** Waited once slots come free after all were taken, before the next claim (to gather more). */
  readonly gather?: Effect.Effect<void> | undefined
}

/** A running claim loop. */
export interface ClaimLoop {
  /** Stops claiming; what is under way goes on. */
  readonly stop: Effect.Effect<void>
  /** How many items' fibers are under way. */
  readonly size: Effect.Effect<number>
  /** Completes when no item's fiber is under way. */
  readonly awaitEmpty: Effect.Effect<void>
  /** Interrupts every item's fiber and waits for them to end. */
  readonly interruptAll: Effect.Effect<void>
  /** Completes while at least one slot is taken (at once then, else when one is). */
  readonly busy: Effect.Effect<void>
}

/** Starts the loop in the current scope; closing it stops the loop and interrupts what runs. */
export const make = <A>(options: Options<A>): Effect.Effect<ClaimLoop, never, Scope.Scope> =>
  Effect.gen(function*() {
    const fibers = yield* FiberSet.make<void>()
    // Taken where interruption is allowed: a layer is built uninterruptibly, and the items'
    // fibers must be interruptible when their owner stops.
    const [runtime, fork] = yield* Effect.interruptible(
      Effect.all([Effect.runtime<never>(), FiberSet.runtime(fibers)<never>()])
    )
    const base = FiberRefs.getOrDefault(runtime.fiberRefs, FiberRef.currentLogAnnotations)
    let free = options.slots
    const slotFreed = yield* Queue.sliding<void>(1)
    /** Open while at least one slot is taken. */
    const busy = yield* Effect.makeLatch(false)

    const start = (item: A) => {
      let held = true
      const freeSlot = () => {
        if (!held) return
        held = false
        free += 1
        if (free === options.slots) busy.unsafeClose()
        Queue.unsafeOffer(slotFreed, undefined)
      }
      free -= 1
      busy.unsafeOpen()
      const work = options.work(item, freeSlot)
      const annotations = options.annotations(item)
      let value = base
      for (const key in annotations) value = HashMap.set(value, key, annotations[key])
      const fiber = fork(work.effect, {
        updateRefs: (refs, fiberId) =>
          FiberRefs.updateAs(refs, { fiberId, fiberRef: FiberRef.currentLogAnnotations, value })
      })
      fiber.addObserver(freeSlot)
      work.forked?.(fiber)
    }

    const step = Effect.gen(function*() {
      if (free === 0) {
        while (free === 0) yield* Queue.take(slotFreed)
        if (options.gather !== undefined) yield* options.gather
      }
      const wanted = Math.min(free, options.batch)
      // Claiming and starting what was claimed cannot be split by an interruption, or a claim
      // would sit unworked until its lease ran out.
      const claimed = yield* Effect.uninterruptible(
        Effect.tap(options.claim(wanted), (items) =>
          Effect.sync(() => {
            for (const item of items) start(item)
          }))
      )
      if (claimed.length < wanted) yield* options.idle(Queue.take(slotFreed))
    })
    const loop = yield* Effect.forkScoped(Effect.whileLoop({ while: () => true, body: () => step, step: () => {} }))

    return {
      stop: Effect.asVoid(Fiber.interrupt(loop)),
      size: FiberSet.size(fibers),
      awaitEmpty: FiberSet.awaitEmpty(fibers),
      interruptAll: FiberSet.clear(fibers),
      busy: busy.await
    }
  })
