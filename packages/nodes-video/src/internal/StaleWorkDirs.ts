/**
 * Temporary directories left by a process that was killed in the middle of video work (a run that
 * ends in any other way removes its own). Each run's directory is named after the process that
 * made it, `appexec-video-<pid>@<host>-XXXXXX`, so a later process can tell a dead owner's
 * directory from a live one's: on the same host, a directory whose process is gone (or whose pid
 * is this process's own, and that is older than this process) is stale at once. Any
 * `appexec-video-*` directory older than twice the longest a run may take (`video.timeoutMs`) is
 * stale too, whoever made it: no run can still be using it, since ffmpeg is killed when its time
 * is up. `serve` and `worker` sweep as they start (`VideoNodes.sweepStaleWorkDirs`); the first
 * video run of a process that did not sweeps in the background. A failure is logged and changes
 * nothing else.
 */
import { Effect, type Fiber, Option } from "effect"
import { readdir, rm, stat } from "node:fs/promises"
import { hostname } from "node:os"
import { join } from "node:path"

/** The prefix of the directory each video run makes. */
export const PREFIX = "appexec-video-"

/** A host name as it stands in a directory name. */
const hostTag = (host: string) => host.replace(/[^A-Za-z0-9.-]/g, "_").slice(0, 64)

/** A directory made by a process of a known host: its pid, its host, and the six characters `mkdtemp` adds. */
const OWNED = /^appexec-video-(\d+)@([A-Za-z0-9._-]+)-[A-Za-z0-9]{6}$/

/** A process, as the sweep sees it: which work directories may still be in use. */
export interface Owner {
  readonly pid: number
  readonly host: string
  /** When the process started (epoch ms): a directory of its pid older than that is not its own. */
  readonly startedAt: number
  /** Whether process `pid` of this host runs. */
  readonly alive: (pid: number) => boolean
}

/** Whether process `pid` exists (one of another user counts). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error instanceof Error && "code" in error && error.code === "EPERM"
  }
}

/** This process. */
export const thisProcess: Owner = { pid: process.pid, host: hostname(), startedAt: performance.timeOrigin, alive }

/** The prefix of the work directories `owner` makes: `appexec-video-<pid>@<host>-`. */
export const prefixOf = (owner: Owner = thisProcess) => `${PREFIX}${owner.pid}@${hostTag(owner.host)}-`

/** Whether the directory `name`, last changed at `changedAt`, can no longer be in use. */
const isStale = (name: string, changedAt: number, timeoutMs: number, now: number, self: Owner) => {
  if (now - changedAt > 2 * timeoutMs) return true
  const owned = OWNED.exec(name)
  if (owned === null || owned[2] !== hostTag(self.host)) return false
  const pid = Number(owned[1])
  return pid === self.pid ? changedAt < self.startedAt : !self.alive(pid)
}

/** Removes the stale work directories in `parent`; the names of those removed. */
export const sweep = (
  parent: string,
  timeoutMs: number,
  now: number,
  self: Owner = thisProcess
): Effect.Effect<ReadonlyArray<string>> =>
  Effect.tryPromise(async () => {
    const removed: Array<string> = []
    for (const entry of await readdir(parent, { withFileTypes: true })) {
      if (!entry.isDirectory() || !entry.name.startsWith(PREFIX)) continue
      const path = join(parent, entry.name)
      const info = await stat(path).catch(() => undefined)
      if (info === undefined || !isStale(entry.name, info.mtimeMs, timeoutMs, now, self)) continue
      await rm(path, { recursive: true, force: true, maxRetries: 3 })
      removed.push(entry.name)
    }
    return removed
  }).pipe(
    Effect.tap((removed) =>
      removed.length === 0
        ? Effect.void
        : Effect.logInfo(`video: removed ${removed.length} temporary directories left by an earlier process`)
    ),
    Effect.catchAll((error) =>
      Effect.logWarning(`video: the temporary directories in ${parent} could not be swept`, error).pipe(Effect.as([]))
    )
  )

const swept = new Set<string>()

/** `sweep` of `parent` now, as a process starts; a later `sweepOnce` of it does nothing. */
export const sweepNow = (parent: string, timeoutMs: number): Effect.Effect<ReadonlyArray<string>> =>
  Effect.suspend(() => {
    swept.add(parent)
    // File times are wall-clock times, so the age is measured against the wall clock too.
    return sweep(parent, timeoutMs, Date.now())
  })

/**
 * `sweep` once per `parent` in this process, forked so that the run does not wait for it: the
 * sweep's fiber when this call started it.
 */
export const sweepOnce = (
  parent: string,
  timeoutMs: number
): Effect.Effect<Option.Option<Fiber.RuntimeFiber<ReadonlyArray<string>>>> =>
  Effect.suspend(() => {
    if (swept.has(parent)) return Effect.succeedNone
    swept.add(parent)
    return Effect.forkDaemon(sweep(parent, timeoutMs, Date.now())).pipe(Effect.map(Option.some))
  })
