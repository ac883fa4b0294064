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
  /** After a commit: flushes the log in the background, unless a flush is under way or was just made. */
  readonly committed: () => void
  /** Closes the log's descriptor (once a flush under way has ended). */
  readonly close: () => void
}

const none: LogWriteBack = { committed: () => {}, close: () => {} }

/**
 * The write-behind of the log of the database at `filename` (in WAL mode); none for an in-memory
 * or temporary database, or when every commit is flushed anyway (`synchronous = FULL`).
 */
export const make = (filename: string, synchronous: "normal" | "full"): LogWriteBack => {
  if (filename === ":memory:" || filename === "" || synchronous === "full") return none
  const log = `${resolve(filename)}-wal`
  let fd: number | undefined
  let flushing = false
  let closed = false
  let last = Number.NEGATIVE_INFINITY
  const closeFd = () => {
    if (fd !== undefined) closeSync(fd)
    fd = undefined
  }
  return {
    committed: () => {
      if (flushing || closed) return
      const now = performance.now()
      if (now - last < INTERVAL_MS) return
      if (fd === undefined) {
        try {
          // Read-only is enough to flush a file; the connection made it when it first wrote.
          fd = openSync(log, "r")
        } catch {
          return
        }
      }
      flushing = true
      last = now
      // A failed flush changes nothing: the checkpoint flushes the log itself.
      fdatasync(fd, () => {
        flushing = false
        if (closed) closeFd()
      })
    },
    close: () => {
      closed = true
      if (!flushing) closeFd()
    }
  }
}
