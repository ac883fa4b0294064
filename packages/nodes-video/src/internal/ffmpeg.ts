/**
 * ffmpeg as an Effect: the binary (the settings', `APPEXEC_FFMPEG`, or the one that
 * `@ffmpeg-installer/ffmpeg` ships in a per-platform npm package), spawned through `Subprocess`:
 * in a process group of its own (a terminal's Ctrl-C reaches appexec, not ffmpeg) and under a
 * watchdog that kills it when appexec is gone. A run is killed with its group (SIGKILL, and waited
 * for) when its fiber is interrupted — a canceled execution, the app's timeout, a stopping worker
 * handing the run back — and when it outlasts `video.timeoutMs`; the time limit is an Effect
 * timeout, so it follows the `Clock` (virtual in tests).
 */
import { NodeType } from "@appexec/core"
import { NodesSettings } from "@appexec/nodes/NodesSettings"
import * as Subprocess from "@appexec/nodes/Subprocess"
import { Config, Duration, Effect, Option, Queue } from "effect"
import type { ChildProcess } from "node:child_process"
import { createRequire } from "node:module"

const load = createRequire(import.meta.url)

const fail = (message: string) => new NodeType.NodeFailure({ message })

/**
 * The ffmpeg binary: `video.ffmpeg` of the settings, else `APPEXEC_FFMPEG`, else the binary of
 * `@ffmpeg-installer/ffmpeg` (resolved at run time: the installer finds its per-platform package
 * from where it is installed, so it is never bundled).
 */
export const binary: Effect.Effect<string, NodeType.NodeFailure, NodesSettings> = Effect.gen(function*() {
  const { video } = yield* NodesSettings
  if (video.ffmpeg !== undefined) return video.ffmpeg
  const fromEnv = yield* Config.option(Config.nonEmptyString("APPEXEC_FFMPEG")).pipe(
    Effect.orElseSucceed(() => Option.none<string>())
  )
  if (Option.isSome(fromEnv)) return fromEnv.value
  return yield* Effect.try({
    try: () => (load("@ffmpeg-installer/ffmpeg") as { readonly path: string }).path,
    catch: (error) => error
  }).pipe(
    Effect.tapError((error) =>
      Effect.logError("ffmpeg: @ffmpeg-installer/ffmpeg has no binary for this platform", error)
    ),
    Effect.mapError(() => fail("ffmpeg is not available on this instance (set APPEXEC_FFMPEG to an ffmpeg binary)"))
  )
})

/** How one run of ffmpeg goes. */
export interface RunOptions {
  /** The arguments after the common ones (`-hide_banner -nostdin -y`). */
  readonly args: ReadonlyArray<string>
  /** The working directory: the run's temporary directory, so that messages name files without it. */
  readonly cwd: string
  /** What the run does, the start of every failure's message ("the video could not be made"). */
  readonly what: string
  /** Length of what is being made, in seconds: progress is reported against it. */
  readonly seconds?: number | undefined
  /** Receives the progress, 0–1, with `2.0 s of 5.0 s`. */
  readonly progress?: ((fraction: number, message: string) => Effect.Effect<void>) | undefined
  /** Accept any exit code (a probe, whose `ffmpeg -i` exits 1 since it writes nothing). */
  readonly anyExit?: boolean
}

/** What a finished run left: its exit code and the end of its standard error. */
export interface Finished {
  readonly code: number | null
  readonly stderr: string
}

/** Most of standard error kept, from its end. */
const STDERR_KEPT = 16 * 1024

/** Fails as ffmpeg that could not be started, logging why for the operator. */
const notStarted = (what: string, why: unknown) =>
  Effect.logError("ffmpeg could not be started", why).pipe(
    Effect.zipRight(Effect.fail(fail(`${what}: ffmpeg could not be started on this instance`)))
  )

/** The end of `child`: its exit code once its output is read, or why it could not start. */
const closed = (child: ChildProcess, what: string) =>
  Effect.async<number | null, NodeType.NodeFailure>((resume) => {
    // A process that cannot start emits "error", and may emit "close" after it: the first counts.
    let settled = false
    const settle = (effect: Effect.Effect<number | null, NodeType.NodeFailure>) => {
      if (!settled) {
        settled = true
        resume(effect)
      }
    }
    child.once("error", (error) => settle(notStarted(what, error)))
    child.once("close", (code) => settle(Effect.succeed(code)))
  })

/** The last line of ffmpeg's standard error worth showing, without the run's directory. */
export const lastError = (stderr: string): string | undefined =>
  stderr
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !/^(Conversion failed!|Exiting normally)/.test(line))
    .at(-1)

/**
 * Runs ffmpeg with `options.args` in `options.cwd` until it exits: a non-zero exit fails with
 * ffmpeg's last error line; a run longer than `video.timeoutMs` fails and is killed, as is a run
 * whose fiber is interrupted. Progress (`-progress pipe:1`) is reported while it runs.
 */
export const run = (options: RunOptions): Effect.Effect<Finished, NodeType.NodeFailure, NodesSettings> =>
  Effect.scoped(Effect.gen(function*() {
    const { video } = yield* NodesSettings
    const path = yield* binary
    const reporting = options.progress !== undefined && options.seconds !== undefined && options.seconds > 0
    const args = [
      "-hide_banner",
      "-nostdin",
      "-y",
      ...(reporting ? ["-progress", "pipe:1", "-nostats"] : []),
      ...options.args
    ]
    const child = yield* Subprocess.scoped(path, args, {
      cwd: options.cwd,
      stdout: reporting ? "pipe" : "ignore",
      stderr: "pipe"
    })
    let stderr = ""
    child.stderr?.setEncoding("utf8")
    child.stderr?.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_KEPT)
    })
    if (reporting) {
      const seconds = options.seconds!
      const times = yield* Queue.sliding<number>(1)
      let pending = ""
      child.stdout?.setEncoding("utf8")
      child.stdout?.on("data", (chunk: string) => {
        const lines = (pending + chunk).split("\n")
        pending = lines.pop() ?? ""
        for (const line of lines) {
          // out_time_ms is in microseconds, despite its name.
          const match = /^out_time_(?:ms|us)=(\d+)$/.exec(line.trim())
          if (match !== null) Queue.unsafeOffer(times, Number(match[1]) / 1_000_000)
        }
      })
      yield* Queue.take(times).pipe(
        Effect.flatMap((done) =>
          options.progress!(Math.min(1, done / seconds), `${Math.min(done, seconds).toFixed(1)} s of ${seconds} s`)
        ),
        Effect.forever,
        Effect.forkScoped
      )
    }
    const code = yield* closed(child, options.what).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(video.timeoutMs),
        onTimeout: () =>
          fail(
            `${options.what}: ffmpeg did not finish within ${+(video.timeoutMs / 1000).toFixed(1)} s and was stopped`
          )
      })
    )
    // The binary is missing or not executable: the shell that starts it says so.
    if (Subprocess.notStarted(code)) return yield* notStarted(options.what, stderr.trim())
    if (code !== 0 && options.anyExit !== true) {
      yield* Effect.logWarning(`ffmpeg exited with ${code}: ${stderr.slice(-2000)}`)
      const detail = lastError(stderr)
      return yield* fail(detail === undefined ? `${options.what}: ffmpeg failed` : `${options.what}: ${detail}`)
    }
    return { code, stderr }
  }))

/** What `ffmpeg -i` says of a media file. */
export interface Probe {
  /** Length in seconds, when the container says. */
  readonly seconds: number | undefined
  /** The first video stream: its codec and frame size. */
  readonly video: { readonly codec: string; readonly width: number; readonly height: number } | undefined
  readonly hasAudio: boolean
}

/** Reads what `ffmpeg -i` prints of its input (the duration, the streams). */
export const parseProbe = (stderr: string): Probe => {
  const duration = /Duration: (\d+):(\d{2}):(\d{2}(?:\.\d+)?)/.exec(stderr)
  const video = /Stream #\d+:\d+[^\n]*?: Video: (\w+)[^\n]*?, (\d+)x(\d+)(?=[ ,\n]|$)/m.exec(stderr)
  return {
    seconds: duration === null
      ? undefined
      : Number(duration[1]) * 3600 + Number(duration[2]) * 60 + Number(duration[3]),
    video: video === null ? undefined : { codec: video[1]!, width: Number(video[2]), height: Number(video[3]) },
    hasAudio: /Stream #\d+:\d+[^\n]*?: Audio: /.test(stderr)
  }
}

/** Probes the input of `input` (its arguments up to `-i file`, in `cwd`); undecodable input fails with `what`. */
export const probe = (input: ReadonlyArray<string>, cwd: string, what: string) =>
  run({ args: input, cwd, what, anyExit: true }).pipe(
    Effect.flatMap(({ stderr }) =>
      /Invalid data found|could not find codec parameters|moov atom not found|EBML header parsing failed/i.test(
          stderr
        ) ||
        !/Duration:/.test(stderr)
        ? Effect.fail(fail(`${what}: the file is not a video ffmpeg can read`))
        : Effect.succeed(parseProbe(stderr))
    )
  )
