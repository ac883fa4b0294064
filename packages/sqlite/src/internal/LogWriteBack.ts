/**
 * Write-behind of the write-ahead log. With `synchronous = NORMAL` a commit is written to the
 * `-wal` file but not flushed: the operating system holds it in its cache until the next
 * checkpoint, whose first step flushes the whole log (up to `wal_autocheckpoint` pages, 40 MB)
 * and stalls the event loop for tens of milliseconds while the disk takes it. Flushing the log
 * from libuv's thread pool a few dozen times a second while commits come leaves a checkpoint
 * little to flush (measured: 50–65 ms checkpoints became 14–21 ms), and puts a commit on disk
 * within about one interval instead of at the next checkpoint.
 */
import { closeSync, fdatasync, openSync } from "node:fs"
import { resolve } from "node:path"

/** Least time between two flushes of the log (ms). */
const INTERVAL_MS = 20

/** What the connection tells the write-behind. */
export interface LogWriteBack {
  /**
   * After a commit: flushes the log in the background, at once or, when the last flush was less
   * than the interval ago or is still under way, once it allows (so the last commit is flushed too).
   */
  readonly committed: () => void
  /** Closes the log's descriptor (once a flush under way has ended). */
  readonly close: () => void
}

const none: LogWriteBack = { committed: () => {}, close: () => {} }

/**
 * The write-behind of the log of the database at `filename` (in WAL mode); none for an in-memory
 * or temporary database, or when every commit is flushed anyway (`synchronous = FULL`).
 */
export const make = (
  filename: string,
  synchronous: "normal" | "full",
  /** How a flush is made (tests count them): `fdatasync` on the thread pool by default. */
  sync: (fd: number, done: () => void) => void = (fd, done) => fdatasync(fd, () => done())
): LogWriteBack => {
  if (filename === ":memory:" || filename === "" || synchronous === "full") return none
  const log = `${resolve(filename)}-wal`
  let fd: number | undefined
  /** A commit came since the last flush began. */
  let dirty = false
  let flushing = false
  let closed = false
  let last = Number.NEGATIVE_INFINITY
  let timer: ReturnType<typeof setTimeout> | undefined
  const closeFd = () => {
    if (fd !== undefined) closeSync(fd)
    fd = undefined
  }
  const flush = () => {
    if (fd === undefined) {
      try {
        // Read-only is enough to flush a file; the connection made it when it first wrote.
        fd = openSync(log, "r")
      } catch {
        return
      }
    }
    dirty = false
    flushing = true
    last = performance.now()
    // A failed flush changes nothing: the checkpoint flushes the log itself.
    sync(fd, () => {
      flushing = false
      if (closed) closeFd()
      else if (dirty) schedule()
    })
  }
  /** Flushes now, or once the interval since the last flush has passed (the last commit included). */
  const schedule = () => {
    if (flushing || closed || timer !== undefined) return
    const wait = last + INTERVAL_MS - performance.now()
    if (wait <= 0) return flush()
    timer = setTimeout(() => {
      timer = undefined
      schedule()
    }, wait)
    // Never what keeps the process alive.
    timer.unref()
  }
  return {
    committed: () => {
      dirty = true
      schedule()
    },
    close: () => {
      closed = true
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      if (!flushing) closeFd()
    }
  }
}
