/**
 * The temporary directories a killed process left from video work are removed by a later
 * process's first video run: only `appexec-video-*` directories older than twice the longest a
 * run may take, once per directory per process.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option } from "effect"
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as StaleWorkDirs from "../src/internal/StaleWorkDirs.js"

const TIMEOUT_MS = 300_000

/** A temporary parent holding `names`, each made `ageMs` old (a file inside the ones that are directories). */
const parentWith = (entries: ReadonlyArray<{ name: string; ageMs: number; file?: boolean }>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const parent = mkdtempSync(join(tmpdir(), "appexec-stale-test-"))
      for (const { ageMs, file, name } of entries) {
        const path = join(parent, name)
        if (file === true) {
          writeFileSync(path, "x")
        } else {
          mkdirSync(path)
          writeFileSync(join(path, "frame.raw"), "x")
        }
        const at = (Date.now() - ageMs) / 1000
        utimesSync(path, at, at)
      }
      return parent
    }),
    (parent) => Effect.sync(() => rmSync(parent, { recursive: true, force: true }))
  )

describe("StaleWorkDirs", () => {
  it.scoped("sweepNow removes them at once, and the first video run then does not sweep again", () =>
    Effect.gen(function*() {
      const parent = yield* parentWith([{ name: "appexec-video-killed", ageMs: 24 * 3600_000 }])
      expect(yield* StaleWorkDirs.sweepNow(parent, TIMEOUT_MS)).toEqual(["appexec-video-killed"])
      expect(Option.isNone(yield* StaleWorkDirs.sweepOnce(parent, TIMEOUT_MS))).toBe(true)
    }))

  it.scoped("removes only video work directories older than twice the run time limit", () =>
    Effect.gen(function*() {
      const parent = yield* parentWith([
        { name: "appexec-video-killed", ageMs: 24 * 3600_000 },
        { name: "appexec-video-running", ageMs: TIMEOUT_MS },
        { name: "appexec-video-file", ageMs: 24 * 3600_000, file: true },
        { name: "someone-else", ageMs: 24 * 3600_000 }
      ])
      const removed = yield* StaleWorkDirs.sweep(parent, TIMEOUT_MS, Date.now())
      expect(removed).toEqual(["appexec-video-killed"])
      expect(existsSync(join(parent, "appexec-video-killed"))).toBe(false)
      expect(existsSync(join(parent, "appexec-video-running"))).toBe(true)
      expect(existsSync(join(parent, "appexec-video-file"))).toBe(true)
      expect(existsSync(join(parent, "someone-else"))).toBe(true)
    }))

  it.scoped("a directory of a process of this host that is gone is removed at once; a live process's is kept", () =>
    Effect.gen(function*() {
      const self: StaleWorkDirs.Owner = {
        pid: 500,
        host: "box-1.local",
        startedAt: Date.now() - 60_000,
        alive: (pid) => pid === 500 || pid === 600
      }
      const dead = StaleWorkDirs.prefixOf({ ...self, pid: 700 }) + "aB3dE9"
      const live = StaleWorkDirs.prefixOf({ ...self, pid: 600 }) + "x1y2z3"
      const ownBefore = StaleWorkDirs.prefixOf(self) + "before"
      const ownNow = StaleWorkDirs.prefixOf(self) + "nowabc"
      const otherHost = StaleWorkDirs.prefixOf({ ...self, host: "box-2", pid: 700 }) + "qwerty"
      expect(dead).toBe("appexec-video-700@box-1.local-aB3dE9")
      const parent = yield* parentWith([
        { name: dead, ageMs: 1000 },
        { name: live, ageMs: 1000 },
        // This process's pid, from before it started: a dead process that had the same pid.
        { name: ownBefore, ageMs: 120_000 },
        { name: ownNow, ageMs: 1000 },
        { name: otherHost, ageMs: 1000 }
      ])
      const removed = yield* StaleWorkDirs.sweep(parent, TIMEOUT_MS, Date.now(), self)
      expect([...removed].sort()).toEqual([dead, ownBefore].sort())
      for (const name of [live, ownNow, otherHost]) expect(existsSync(join(parent, name))).toBe(true)
    }))

  it("this process's directories are named after its pid and host", () => {
    expect(StaleWorkDirs.prefixOf()).toMatch(new RegExp(`^appexec-video-${process.pid}@[A-Za-z0-9._-]+-$`))
  })

  it.scoped("sweeps a directory once per process, in a fiber of its own", () =>
    Effect.gen(function*() {
      const parent = yield* parentWith([{ name: "appexec-video-killed", ageMs: 24 * 3600_000 }])
      const first = yield* StaleWorkDirs.sweepOnce(parent, TIMEOUT_MS)
      expect(Option.isSome(first)).toBe(true)
      if (Option.isSome(first)) expect(yield* Fiber.join(first.value)).toEqual(["appexec-video-killed"])
      mkdirSync(join(parent, "appexec-video-later"))
      const old = (Date.now() - 24 * 3600_000) / 1000
      utimesSync(join(parent, "appexec-video-later"), old, old)
      expect(Option.isNone(yield* StaleWorkDirs.sweepOnce(parent, TIMEOUT_MS))).toBe(true)
      expect(existsSync(join(parent, "appexec-video-later"))).toBe(true)
    }))

  it.effect("a parent that cannot be read is logged, not a failure", () =>
    Effect.gen(function*() {
      expect(yield* StaleWorkDirs.sweep(join(tmpdir(), "appexec-no-such-parent-dir"), TIMEOUT_MS, Date.now())).toEqual(
        []
      )
    }))
})
