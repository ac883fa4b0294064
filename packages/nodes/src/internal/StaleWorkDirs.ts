/**
 * Temporary directories left by a process that was killed in the middle of video work (a run that
 * ends in any other way removes its own). The first video run of a process in a temporary
 * directory removes the `appexec-video-*` directories there that are older than twice the
 * longest a run may take (`video.timeoutMs`): no run of any process can still be using them,
 * since ffmpeg is killed when its time is up. Done once per directory per process, in the
 * background of the run that triggers it; a failure is logged and changes nothing else.
 */
import { Effect, type Fiber, Option } from "effect"
import { readdir, rm, stat } from "node:fs/promises"
import { join } from "node:path"

/** The prefix of the directory each video run makes. */
export const PREFIX = "appexec-video-"

const swept = new Set<string>()

/** Removes the stale work directories in `parent`; the names of those removed. */
export const sweep = (parent: string, timeoutMs: number, now: number): Effect.Effect<ReadonlyArray<string>> =>
  Effect.tryPromise(async () => {
    const removed: Array<string> = []
    for (const entry of await readdir(parent, { withFileTypes: true })) {
      if (!entry.isDirectory() || !entry.name.startsWith(PREFIX)) continue
      const path = join(parent, entry.name)
      const info = await stat(path).catch(() => undefined)
      if (info === undefined || now - info.mtimeMs <= 2 * timeoutMs) continue
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
    // File times are wall-clock times, so the age is measured against the wall clock too.
    return Effect.forkDaemon(sweep(parent, timeoutMs, Date.now())).pipe(Effect.map(Option.some))
  })
