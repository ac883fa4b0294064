/**
 * Child processes of node types (ffmpeg, or a host's own tool), held to two promises
 * (docs/nodes.md#child-processes):
 *
 * - each runs in a process group of its own (a session: `detached`), so a terminal's Ctrl-C, or
 *   a signal sent to appexec's process group, reaches appexec alone, which then stops in order
 *   (docs/operations.md#stopping);
 * - none outlives appexec, even one killed with SIGKILL: the command is started by a small
 *   `/bin/sh` watchdog that holds a pipe from appexec on its standard input. When appexec is gone,
 *   by any means, the kernel closes that pipe; the watchdog reads its end of file and kills the
 *   command (SIGKILL) within milliseconds, waits for it and exits. Node has no
 *   `prctl(PR_SET_PDEATHSIG)`; this needs none.
 *
 * appexec kills a child the same way (`kill`): it closes the pipe, so the watchdog kills and
 * reaps the command (no zombie is left to an init that does not reap), then it kills whatever
 * else is left in the group. The child's standard input is `/dev/null` (the pipe is the
 * watchdog's); its standard output and error are appexec's to read. A command that cannot be run
 * exits `126` or `127`, as a shell says (`notStarted`), with the shell's reason on standard error.
 * On Windows, which has neither process groups nor `/bin/sh`, the command is spawned directly and
 * killed alone.
 */
import { Effect } from "effect"
import { type ChildProcess, spawn as spawnChild } from "node:child_process"

/**
 * The watchdog (POSIX sh): keeps the pipe from appexec (its standard input) on fd 3 for a
 * background reader and starts the command with `/dev/null` as input. The reader waits for end
 * of file, which comes only when appexec is gone or closes the pipe, then kills the command; the
 * watchdog waits for the command, stops the reader, and exits with the command's status.
 */
const WATCHDOG = [
  "exec 3<&0 0</dev/null",
  "\"$@\" 3<&- &",
  "child=$!",
  "{ while read -r _ <&3; do :; done; kill -KILL \"$child\" 2>/dev/null; } &",
  "watch=$!",
  "exec 3<&-",
  "wait \"$child\"",
  "status=$?",
  "kill \"$watch\" 2>/dev/null",
  "exit \"$status\""
].join("\n")

/** How long a watchdog may take to end its command once told before its whole group is killed. */
const WATCHDOG_GRACE_MS = 2000

/** Where the child's standard output and error go. */
export interface SpawnOptions {
  /** The working directory of the command. */
  readonly cwd?: string | undefined
  readonly stdout: "pipe" | "ignore"
  readonly stderr: "pipe" | "ignore"
}

const posix = process.platform !== "win32"

/**
 * Spawns `command` with `args` in a process group of its own, under the watchdog. Spawning does
 * not fail: a command that cannot be run exits with a `notStarted` status.
 */
export const spawn = (command: string, args: ReadonlyArray<string>, options: SpawnOptions): ChildProcess =>
  posix
    ? spawnChild("/bin/sh", ["-c", WATCHDOG, "appexec-child", command, ...args], {
      cwd: options.cwd,
      detached: true,
      stdio: ["pipe", options.stdout, options.stderr]
    })
    : spawnChild(command, args, {
      cwd: options.cwd,
      stdio: ["ignore", options.stdout, options.stderr],
      windowsHide: true
    })

/** Whether an exit status says that the command could not be run at all (not found, not executable). */
export const notStarted = (code: number | null): boolean => posix && (code === 126 || code === 127)

/** Kills what is left in the process group of `child` (SIGKILL): nothing when it is gone. */
const killGroup = (child: ChildProcess) => {
  if (child.pid === undefined) return
  try {
    if (posix) process.kill(-child.pid, "SIGKILL")
    else child.kill("SIGKILL")
  } catch {
    // The group is gone.
  }
}

/**
 * Kills the child and waits until it has exited: the watchdog is told (its pipe closed) and ends
 * the command, and what is left in the group then (something the command started) is killed; a
 * watchdog that does not end within two seconds has its whole group killed.
 */
export const kill = (child: ChildProcess): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) {
      killGroup(child)
      return resume(Effect.void)
    }
    child.once("exit", () => {
      killGroup(child)
      resume(Effect.void)
    })
    if (!posix) return killGroup(child)
    child.stdin?.destroy()
    const late = setTimeout(() => killGroup(child), WATCHDOG_GRACE_MS)
    child.once("exit", () => clearTimeout(late))
  })

/** `spawn` for the life of the scope: its group is killed (`kill`) when the scope closes. */
export const scoped = (command: string, args: ReadonlyArray<string>, options: SpawnOptions) =>
  Effect.acquireRelease(Effect.sync(() => spawn(command, args, options)), kill)
