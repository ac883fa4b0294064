/**
 * An Effect scheduler that runs the tasks of the fibers given to it a slice at a time, one slice
 * per turn of Node's event loop (`setImmediate`), so that what the sockets brought in (a poll, a
 * start) is read between two slices. The event streams of one execution are woken together at
 * each of its changes (2,000 of them on a busy execution); run as one batch, as Effect's default
 * scheduler runs what is ready, they would hold every other request for as long as the batch.
 */
import { Scheduler } from "effect"

/** How many tasks run in one turn of the event loop, unless given. */
export const DEFAULT_SLICE = 64

/** A scheduler running at most `slice` tasks a turn, in the order they were scheduled. */
export const make = (slice = DEFAULT_SLICE): Scheduler.Scheduler => {
  let queue: Array<Scheduler.Task> = []
  let scheduled = false
  const run = () => {
    const now = queue.length <= slice ? queue : queue.slice(0, slice)
    queue = queue.length <= slice ? [] : queue.slice(slice)
    for (const task of now) task()
    scheduled = queue.length > 0
    if (scheduled) setImmediate(run)
  }
  return {
    shouldYield: Scheduler.defaultShouldYield,
    scheduleTask: (task) => {
      queue.push(task)
      if (!scheduled) {
        scheduled = true
        setImmediate(run)
      }
    }
  }
}
