/**
 * The claim loop shared by every consumer of a queue (the worker's executions, the webhook
 * dispatcher's deliveries): it claims as many items as it has free slots (up to a batch) in one
 * claim, and starts each in a fiber of its own, supervised by a `FiberSet` that interrupts what
 * still runs when the scope closes (as `cluster`'s `Sharding` does): one way to run an item once
 * claimed. The fibers are forked from
 * plain code with a runtime taken once, each with the log annotations of its item set as it is
 * made (not through `Effect.annotateLogs`, which copies the fiber refs twice each time).
 *
 * While work keeps coming, the loop also claims ahead of need, as graphile-worker's local queue
 * does: a few items more than its free slots, held in a local queue and started the moment a
 * slot comes free (by the run that frees it, without waiting for the loop), so that no slot waits
 * on the round trip of a claim. How many it holds is what its slots free during one claim's
 * round trip, at the recent time an item holds a slot (twice that, at most a batch): none when
 * the queue runs dry or the items are slow (a slow item's claim never sits behind another while
 * a worker elsewhere is idle), nor while the clock stands still (virtual time). An item's
 * work is made as it is claimed, so its consumer holds it from the claim on (the worker keeps its
 * lease and hears its cancel); once the loop is stopped, held items start as slots free, and
 * those still held when everything is interrupted are started and interrupted with the rest, so
 * that their consumer gives them back.
 */
import { Effect, Fiber, FiberRef, FiberRefs, FiberSet, HashMap, Queue, type Scope } from "effect"

/** One item's work, made when it is claimed. */
export interface Work {
  /** What runs in the item's fiber. */
  readonly effect: Effect.Effect<void>
  /** Told the item's fiber once it is forked, before it runs. */
  readonly forked?: ((fiber: Fiber.RuntimeFiber<void>) => void) | undefined
}

/** What a consumer gives the loop. */
export interface Options<A> {
  /** Most items under way at once. */
  readonly slots: number
  /**
   * Most items one claim takes, and most items held ahead of need; a function is asked before
   * each claim (a consumer whose claims cost more per item at times takes fewer then).
   */
  readonly batch: number | (() => number)
  /** Claims up to `n` items; a failure is the consumer's to log and answer with none. */
  readonly claim: (n: number) => Effect.Effect<ReadonlyArray<A>>
  /**
   * The work of a claimed item, made synchronously as it is claimed. `freeSlot` gives the slot
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
  /** Stops claiming; what is under way goes on, and the items claimed ahead start as slots free. */
  readonly stop: Effect.Effect<void>
  /** How many items' fibers are under way. */
  readonly size: Effect.Effect<number>
  /** Completes when no item's fiber is under way. */
  readonly awaitEmpty: Effect.Effect<void>
  /** Interrupts every item's fiber, and the items still held ahead, and waits for them to end. */
  readonly interruptAll: Effect.Effect<void>
  /** Completes while at least one slot is taken (at once then, else when one is). */
  readonly busy: Effect.Effect<void>
}

/** An item claimed, its work made (the consumer holds it from then on). */
interface Held<A> {
  readonly item: A
  readonly work: Work
  /** Takes the item's slot as it is started; `freeSlot` gives it back. */
  readonly take: () => void
  readonly freeSlot: () => void
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
    /** Offered when a slot comes free, or when the local queue runs low. */
    const slotFreed = yield* Queue.sliding<void>(1)
    /** Open while at least one slot is taken. */
    const busy = yield* Effect.makeLatch(false)
    /** The local queue: items claimed ahead, oldest first; never held while a slot is free. */
    const held: Array<Held<A>> = []
    /** At or below this many held items, the loop is woken to claim ahead again. */
    let lowWater = 0
    const clock = yield* Effect.clock
    /** How long an item holds its slot (ns), averaged over the recent ones. */
    let runTime = 0
    /** The round trip of the previous claim (ns), 0 when it found too little work. */
    let lastRoundTrip = 0

    const fiberOf = (entry: Held<A>) => {
      const annotations = options.annotations(entry.item)
      let value = base
      for (const key in annotations) value = HashMap.set(value, key, annotations[key])
      const fiber = fork(entry.work.effect, {
        updateRefs: (refs, fiberId) =>
          FiberRefs.updateAs(refs, { fiberId, fiberRef: FiberRef.currentLogAnnotations, value })
      })
      entry.work.forked?.(fiber)
      return fiber
    }

    /**
     * Starts `entry` in a fiber of its own, in a slot already counted as taken. A fiber runs at once
     * as it is forked, up to its first wait, and may give its slot back on the way, which starts the
     * next held item: that one is started once the fork in progress returns (`starting`), never
     * inside it, so that items that end at once do not nest one in the other.
     */
    const starting: Array<Held<A>> = []
    const start = (entry: Held<A>) => {
      starting.push(entry)
      if (starting.length > 1) return
      for (let next = starting[0]; next !== undefined; next = starting[0]) {
        try {
          next.take()
          fiberOf(next).addObserver(next.freeSlot)
        } finally {
          starting.shift()
        }
      }
    }

    /** Makes the item's work: the consumer holds the item from now on. */
    const made = (item: A): Held<A> => {
      let startedAt: bigint | undefined
      let given = false
      const freeSlot = () => {
        if (startedAt === undefined || given) return
        given = true
        const took = Number(clock.unsafeCurrentTimeNanos() - startedAt)
        runTime = runTime === 0 ? took : 0.8 * runTime + 0.2 * took
        // The next held item takes the slot at once, without waiting for the loop.
        const next = held.shift()
        if (next !== undefined) {
          if (held.length === lowWater) Queue.unsafeOffer(slotFreed, undefined)
          return start(next)
        }
        free += 1
        if (free === options.slots) busy.unsafeClose()
        Queue.unsafeOffer(slotFreed, undefined)
      }
      const work = options.work(item, freeSlot)
      return {
        item,
        work,
        take: () => {
          startedAt = clock.unsafeCurrentTimeNanos()
        },
        freeSlot
      }
    }

    /**
     * How many to hold beyond the free slots: twice what the slots free during one claim's round
     * trip, at the items' recent time in a slot; none while the clock stands still.
     */
    const aheadOf = (batch: number) =>
      lastRoundTrip <= 0 || runTime <= 0
        ? 0
        : Math.min(batch, Math.floor((2 * options.slots * lastRoundTrip) / runTime))
    const given = options.batch
    const batchOf = typeof given === "number" ? () => given : given

    const step = Effect.gen(function*() {
      const batch = batchOf()
      const ahead = aheadOf(batch)
      const wanted = Math.min(batch, free + ahead - held.length)
      if (wanted <= 0) {
        yield* Queue.take(slotFreed)
        if (options.gather !== undefined) yield* options.gather
        return
      }
      const now = clock.unsafeCurrentTimeNanos()
      lowWater = Math.floor(ahead / 2)
      // Claiming and making the work of what was claimed cannot be split by an interruption, or a
      // claim would sit unworked until its lease ran out.
      const claimed = yield* Effect.uninterruptible(
        Effect.tap(options.claim(wanted), (items) =>
          Effect.sync(() => {
            for (const item of items) held.push(made(item))
            while (free > 0 && held.length > 0) {
              free -= 1
              busy.unsafeOpen()
              start(held.shift()!)
            }
          }))
      )
      lastRoundTrip = Number(clock.unsafeCurrentTimeNanos() - now)
      if (claimed.length < wanted) {
        // Out of work for now: nothing is claimed ahead until a claim finds enough again.
        lastRoundTrip = 0
        yield* options.idle(Queue.take(slotFreed))
      }
    })
    const loop = yield* Effect.forkScoped(Effect.whileLoop({ while: () => true, body: () => step, step: () => {} }))

    /**
     * The held items, each started outside the slots, to be interrupted with the others: a
     * consumer gives back what it held (the worker releases the lease). Each runs its first step
     * before the interruption (the yield below), so that it reaches its own handling of one.
     */
    const startHeldAnyway = Effect.suspend(() => {
      const left = held.splice(0)
      for (const entry of left) fiberOf(entry)
      return left.length > 0 ? Effect.yieldNow() : Effect.void
    })

    return {
      stop: Effect.asVoid(Fiber.interrupt(loop)),
      size: FiberSet.size(fibers),
      awaitEmpty: FiberSet.awaitEmpty(fibers),
      interruptAll: Effect.zipRight(startHeldAnyway, FiberSet.clear(fibers)),
      busy: busy.await
    }
  })
