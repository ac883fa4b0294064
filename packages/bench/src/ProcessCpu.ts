/**
 * CPU time from Linux's `/proc`: of another process (a server the benchmark started), and of
 * this process's threads. Every figure is user plus system time in microseconds; on a system
 * without `/proc` the readers answer 0 or `undefined`.
 */
import { readdirSync, readFileSync } from "node:fs"

/** Microseconds in a clock tick of `/proc/…/stat` (100 ticks a second). */
const TICK_MICROS = 1_000_000 / 100

/** The fields of a `stat` line after the command name (which may hold spaces): field 3 of proc(5) first. */
const fieldsOf = (stat: string): ReadonlyArray<string> => stat.slice(stat.lastIndexOf(")") + 2).split(" ")

/** utime + stime of a `stat` line (fields 14 and 15 of proc(5)). */
const usedOf = (stat: string): number => {
  const fields = fieldsOf(stat)
  return (Number(fields[11]) + Number(fields[12])) * TICK_MICROS
}

/** CPU time of this process's children that have ended and been waited for (cutime + cstime, fields 16 and 17), 0 without `/proc`. */
export const ofReapedChildren = (): number => {
  try {
    const fields = fieldsOf(readFileSync("/proc/self/stat", "utf8"))
    return (Number(fields[13]) + Number(fields[14])) * TICK_MICROS
  } catch {
    return 0
  }
}

/** CPU time process `pid` has used so far (0 when it cannot be read). */
export const ofProcess = (pid: number | undefined): number => {
  try {
    return usedOf(readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return 0
  }
}

/**
 * CPU time the main thread of process `pid` has used so far (0 when it cannot be read); the rest
 * of a Node process's time is V8's threads (compiler, collector helpers) and libuv's pool.
 */
export const ofMainThread = (pid: number | undefined): number => {
  try {
    return usedOf(readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8"))
  } catch {
    return 0
  }
}

/** CPU time of this process's main thread and of all its threads so far. */
export const ofThreads = (): { readonly main: number; readonly all: number } | undefined => {
  try {
    let main = 0
    let all = 0
    for (const task of readdirSync("/proc/self/task")) {
      const used = usedOf(readFileSync(`/proc/self/task/${task}/stat`, "utf8"))
      all += used
      // The main thread's id is the process id.
      if (Number(task) === process.pid) main = used
    }
    return { main, all }
  } catch {
    return undefined
  }
}
