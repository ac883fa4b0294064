/**
 * Stopping is harmless (docs/operations.md#stopping), through the compiled command on SQLite and
 * on PostgreSQL: `serve` runs in a process group of its own, as a terminal runs it, and a Ken
 * Burns run is stopped while ffmpeg encodes by a SIGINT sent to that whole group (a terminal's
 * Ctrl-C). ffmpeg, in a group of its own, does not get it; the run is handed back, not failed;
 * the next start runs it again as attempt 2 and its MP4 decodes. A second SIGINT during the drain
 * stops at once and loses nothing either. And when `serve` is killed with SIGKILL, its ffmpeg is
 * gone within a second and the next start removes the work directory it left.
 */
import { describe, expect, it } from "@effect/vitest"
import { type Duration, Effect, Schedule } from "effect"
import { execFile } from "node:child_process"
import { readdirSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { childrenOf, groupOf, liveInGroup } from "../../nodes/test/support/Processes.js"
import { backends } from "./support/Backends.js"
import { restartServe, spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

const ffprobePath = (createRequire(import.meta.url)("@ffprobe-installer/ffprobe") as { path: string }).path

/** A served instance: its URL and the key printed at its first start. */
interface Served {
  readonly baseUrl: string
  readonly key: string
}

const json = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    // Fields are checked one by one below; the shapes are the API's, tested in @appexec/http.
    return { status: response.status, body: (await response.json()) as any }
  })

/** Starts the Ken Burns app from a prompt: its execution id. */
const startKenBurns = (serve: Served) =>
  Effect.gen(function*() {
    const headers = { "x-api-key": serve.key }
    const apps = yield* json(`${serve.baseUrl}/v1/apps?search=ken%20burns`, { headers })
    const app = apps.body.data.find((a: { name: string }) => a.name === "Ken Burns")
    const started = yield* json(`${serve.baseUrl}/v1/apps/${app.appId}/executions`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ inputs: { prompt: "A harbour at dawn" } })
    })
    expect(started.status).toBe(202)
    return String(started.body.data.executionId)
  })

/** Long-polls an execution until it has ended (each poll answered at the end or after 30 s). */
const awaitEnd = (serve: Served, id: string) =>
  json(`${serve.baseUrl}/v1/executions/${id}`, { headers: { "x-api-key": serve.key, prefer: "wait=30" } }).pipe(
    Effect.map((polled) => polled.body.data),
    Effect.filterOrFail(
      (execution) => execution.status === "completed" || execution.status === "failed",
      () => new Error(`${id} has not ended`)
    ),
    Effect.retry(Schedule.recurs(6))
  )

/** Retries `check` every 20 ms until it answers, for at most `within`. */
const eventually = <A>(what: string, check: () => A | undefined, within: Duration.DurationInput = "60 seconds") =>
  Effect.suspend(() => {
    const value = check()
    return value === undefined ? Effect.fail(new Error(`not yet: ${what}`)) : Effect.succeed(value)
  }).pipe(
    Effect.retry(Schedule.spaced("20 millis")),
    Effect.timeoutFail({ duration: within, onTimeout: () => new Error(`${what}: not within ${within}`) })
  )

/** The ffmpeg that `serve` runs, once it runs: a child of its watchdog, a child of `serve`. */
const ffmpegOf = (servePid: number) =>
  eventually("ffmpeg encoding", () =>
    childrenOf(servePid)
      .flatMap((watchdog) => childrenOf(watchdog.pid))
      .find((p) => p.command === "ffmpeg")?.pid)

/** The messages of `serve`'s JSON log lines, with their levels. */
const logLines = (stderr: string) =>
  stderr.split("\n").filter((line) => line.startsWith("{")).map((line) =>
    JSON.parse(line) as { readonly message: string; readonly level: string }
  )

/** Downloads the run's video and reads it with ffprobe. */
const probedVideo = (execution: any, dir: string) =>
  Effect.gen(function*() {
    const url: string = execution.outputs.find((o: { id: string }) => o.id === "video").value
    const bytes = yield* Effect.promise(() => fetch(url).then((r) => r.arrayBuffer()))
    const file = join(dir, "downloaded.mp4")
    writeFileSync(file, new Uint8Array(bytes))
    return yield* Effect.async<{ streams: Array<Record<string, unknown>>; format: Record<string, unknown> }, Error>(
      (resume) => {
        execFile(
          ffprobePath,
          ["-v", "error", "-show_streams", "-show_format", "-of", "json", file],
          (error, stdout) => resume(error === null ? Effect.succeed(JSON.parse(stdout)) : Effect.fail(error))
        )
      }
    )
  })

/** Starts `serve` again on the same data, waits for the run to end, and checks it ran again as attempt 2 and decodes. */
const completesAfterRestart = (
  dataDir: string,
  env: Record<string, string>,
  key: string,
  id: string
) =>
  Effect.gen(function*() {
    const again = yield* restartServe(dataDir, [], env)
    const done = yield* awaitEnd({ baseUrl: again.baseUrl, key }, id)
    expect(done, again.output.stderr).toMatchObject({ status: "completed", attempt: 2, errorMessage: null })
    // Handed back (its lease released), not taken over after a lost lease.
    const rerun = logLines(again.output.stderr).find((l) =>
      l.message === `execution ${id} runs again after its worker handed it back (attempt 2)`
    )
    expect(rerun?.level).toBe("info")
    const probed = yield* probedVideo(done, dataDir)
    expect(probed.streams[0]).toMatchObject({ codec_name: "h264", width: 1280, height: 720 })
    expect(Number(probed.format.duration)).toBeCloseTo(5, 1)
  })

for (const backend of backends) {
  describe(`stopping serve and worker on ${backend.name}`, () => {
    it.scopedLive(
      "Ctrl-C (SIGINT to serve's process group) while ffmpeg encodes: the run is handed back, not failed, and completes after a restart as attempt 2",
      () =>
        Effect.gen(function*() {
          const env = { ...(yield* backend.env), APPEXEC_VIDEO_TEMP_DIR: yield* tempDataDir }
          const dataDir = yield* tempDataDir
          const serve = yield* startServe(dataDir, ["--drain-timeout", "1s"], env, { group: true })
          const id = yield* startKenBurns(serve)
          const pid = serve.child.pid!
          const ffmpeg = yield* ffmpegOf(pid)
          // ffmpeg runs in a process group of its own: the terminal's Ctrl-C reaches serve alone.
          const group = groupOf(ffmpeg)!
          expect(group).not.toBe(pid)
          process.kill(-pid, "SIGINT")
          expect(yield* serve.exited("60 seconds")).toEqual({ code: 0, signal: null })
          // Killed as the run was handed back, not by the SIGINT (which makes it fail the run).
          expect(liveInGroup(group)).toEqual([])
          const said = logLines(serve.output.stderr).map((l) => l.message)
          expect(said.some((m) => m.includes("press Ctrl-C again (or send SIGTERM again) to stop at once"))).toBe(true)
          expect(said).toContain(
            `worker stopping: waiting for 1 running execution: Ken Burns (${id}); 1 s left, then it is handed back to run again on the next start`
          )
          expect(said).toContain(
            "worker stopping after 1s: handing back 1 running execution to run again on the next start"
          )
          expect(said.filter((m) => m.includes(id) && / failed\b/.test(m))).toEqual([])

          yield* completesAfterRestart(dataDir, env, serve.key, id)
        }),
      240_000
    )

    it.scopedLive(
      "a second Ctrl-C during the drain stops at once; the run is handed back all the same and completes after a restart",
      () =>
        Effect.gen(function*() {
          const env = { ...(yield* backend.env), APPEXEC_VIDEO_TEMP_DIR: yield* tempDataDir }
          const dataDir = yield* tempDataDir
          const serve = yield* startServe(dataDir, ["--drain-timeout", "60s"], env, { group: true })
          const id = yield* startKenBurns(serve)
          const pid = serve.child.pid!
          yield* ffmpegOf(pid)
          process.kill(-pid, "SIGINT")
          // A second into the drain (a signal within half a second of the first is the same press).
          yield* serve.waitFor(/worker stopping: waiting for 1 running execution: Ken Burns .*; 59 s left/, "stderr")
          const again = Date.now()
          process.kill(-pid, "SIGINT")
          yield* serve.exited("10 seconds")
          const took = Date.now() - again
          // Within the two seconds a hurried stop may take (StopSignals), not the 60 s drain.
          expect(took, serve.output.stderr).toBeLessThan(3000)
          const said = logLines(serve.output.stderr).map((l) => l.message)
          expect(said).toContain("SIGINT again: stopping at once; what still runs is handed back")
          expect(said).toContain(
            "worker stopping at once: handing back 1 running execution to run again on the next start"
          )
          console.log(`${backend.name}: stopped ${took} ms after the second SIGINT`)

          yield* completesAfterRestart(dataDir, env, serve.key, id)
        }),
      240_000
    )

    it.scopedLive(
      "appexec worker, stopped by Ctrl-C while ffmpeg encodes, counts down and hands the run back; the next worker completes it",
      () =>
        Effect.gen(function*() {
          const env = { ...(yield* backend.env), APPEXEC_VIDEO_TEMP_DIR: yield* tempDataDir }
          const dataDir = yield* tempDataDir
          const api = yield* startServe(dataDir, ["--no-worker"], env)
          const worker = () =>
            Effect.tap(
              spawnAppexec(["worker", "--data", dataDir, "--drain-timeout", "1s"], env, { group: true }),
              (w) => w.waitFor(/appexec worker is running/, "stderr", "20 seconds")
            )
          const first = yield* worker()
          const id = yield* startKenBurns(api)
          const pid = first.child.pid!
          yield* ffmpegOf(pid)
          process.kill(-pid, "SIGINT")
          expect(yield* first.exited("60 seconds")).toEqual({ code: 0, signal: null })
          const said = logLines(first.output.stderr).map((l) => l.message)
          expect(said.some((m) => m.startsWith("stopping: draining the worker (press Ctrl-C again"))).toBe(true)
          expect(said).toContain(
            `worker stopping: waiting for 1 running execution: Ken Burns (${id}); 1 s left, then it is handed back to run again on the next start`
          )
          expect(said).toContain(
            "worker stopping after 1s: handing back 1 running execution to run again on the next start"
          )

          const second = yield* worker()
          const done = yield* awaitEnd(api, id)
          expect(done, second.output.stderr).toMatchObject({ status: "completed", attempt: 2, errorMessage: null })
        }),
      240_000
    )
  })
}

describe("serve killed with SIGKILL", () => {
  it.scopedLive(
    "its ffmpeg is gone within a second, and the next start removes the work directory it left",
    () =>
      Effect.gen(function*() {
        const videoTemp = yield* tempDataDir
        const env = { APPEXEC_VIDEO_TEMP_DIR: videoTemp }
        const dataDir = yield* tempDataDir
        const serve = yield* startServe(dataDir, [], env, { group: true })
        yield* startKenBurns(serve)
        const pid = serve.child.pid!
        const ffmpeg = yield* ffmpegOf(pid)
        const group = groupOf(ffmpeg)!
        expect(liveInGroup(group).map((p) => p.command)).toContain("ffmpeg")
        const left = readdirSync(videoTemp)
        expect(left).toEqual([expect.stringMatching(new RegExp(`^appexec-video-${pid}@`))])

        const killedAt = Date.now()
        process.kill(pid, "SIGKILL")
        yield* eventually("ffmpeg's group gone", () => (liveInGroup(group).length === 0 ? true : undefined), "1 second")
        const gone = Date.now() - killedAt
        expect(gone).toBeLessThan(1000)
        console.log(`ffmpeg and its watchdog gone ${gone} ms after serve's SIGKILL`)
        // The killed process could not remove its work directory.
        expect(readdirSync(videoTemp)).toEqual(left)

        // Removed as the next process starts, before it takes any work.
        const next = yield* restartServe(dataDir, [], env)
        yield* next.waitFor(/video: removed 1 temporary directories left by an earlier process/, "stderr")
        expect(readdirSync(videoTemp)).toEqual([])
      }),
    120_000
  )
})
