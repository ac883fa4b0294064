/**
 * The write-behind of the write-ahead log (`internal/LogWriteBack.ts`): one flush at a time, at
 * most one per interval, the last commit always flushed; none for a database that needs none.
 * Its flushes are counted through the function it is given, on fake timers and clock.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "@effect/vitest"
import { fstatSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as LogWriteBack from "../src/internal/LogWriteBack.js"

/** A database path whose `-wal` file exists, and the flushes asked for, each with its `done`. */
const setup = () => {
  const dir = mkdtempSync(join(tmpdir(), "appexec-writeback-"))
  const filename = join(dir, "appexec.db")
  writeFileSync(`${filename}-wal`, "")
  const flushes: Array<{ fd: number; done: () => void }> = []
  const writeBack = LogWriteBack.make(filename, "normal", (fd, done) => flushes.push({ fd, done }))
  return { dir, flushes, writeBack }
}

describe("the write-behind of the log", () => {
  let dir: string | undefined
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] })
  })
  afterEach(() => {
    vi.useRealTimers()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("flushes at the first commit, then at most once per 20 ms, one flush at a time, the last commit included", () => {
    const t = setup()
    dir = t.dir
    t.writeBack.committed()
    expect(t.flushes.length).toBe(1)
    // Commits while the flush is under way ask for nothing more yet.
    t.writeBack.committed()
    t.writeBack.committed()
    expect(t.flushes.length).toBe(1)
    vi.advanceTimersByTime(5)
    t.flushes[0]!.done()
    // Done 5 ms after it began: the commits since are flushed 20 ms after it began, not before.
    vi.advanceTimersByTime(14)
    expect(t.flushes.length).toBe(1)
    vi.advanceTimersByTime(1)
    expect(t.flushes.length).toBe(2)
    t.flushes[1]!.done()
    // Nothing committed since: nothing more to flush, however long it waits.
    vi.advanceTimersByTime(1_000)
    expect(t.flushes.length).toBe(2)
    // A lone commit long after: flushed at once.
    t.writeBack.committed()
    expect(t.flushes.length).toBe(3)
    t.writeBack.close()
  })

  it("closes the log's descriptor once the flush under way has ended, and flushes nothing after", () => {
    const t = setup()
    dir = t.dir
    t.writeBack.committed()
    const fd = t.flushes[0]!.fd
    t.writeBack.committed()
    t.writeBack.close()
    // Still open: the flush under way uses it.
    expect(fstatSync(fd).isFile()).toBe(true)
    t.flushes[0]!.done()
    expect(() => fstatSync(fd)).toThrow()
    vi.advanceTimersByTime(1_000)
    t.writeBack.committed()
    expect(t.flushes.length).toBe(1)
  })

  it("flushes nothing with synchronous = FULL (every commit is flushed already)", () => {
    // A log that a flush would find: only the setting keeps it from flushing.
    const t = setup()
    dir = t.dir
    const flushes: Array<number> = []
    const writeBack = LogWriteBack.make(join(t.dir, "appexec.db"), "full", (fd) => flushes.push(fd))
    writeBack.committed()
    vi.advanceTimersByTime(1_000)
    writeBack.committed()
    writeBack.close()
    expect(flushes).toEqual([])
  })
})
