/**
 * What Linux's `/proc` says of processes, for tests of child processes: a process's command
 * name, its process group, its live children and the live members of a group (a zombie, dead and
 * not yet reaped, is not live).
 */
import { readdirSync, readFileSync } from "node:fs"

/** The fields of `/proc/<pid>/stat` after the command name: state, parent, group, … */
const statOf = (pid: number | string): ReadonlyArray<string> | undefined => {
  try {
    // The command name is in parentheses and may hold spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/** The command name of process `pid`, or undefined when it is gone. */
export const commandOf = (pid: number): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim()
  } catch {
    return undefined
  }
}

/** The process group of process `pid`, or undefined when it is gone. */
export const groupOf = (pid: number): number | undefined => {
  const stat = statOf(pid)
  return stat === undefined ? undefined : Number(stat[2])
}

/** The live processes (not zombies) whose parent is `pid`, with their command names. */
export const childrenOf = (pid: number): ReadonlyArray<{ readonly pid: number; readonly command: string }> =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((entry) => {
      const stat = statOf(entry)
      if (stat === undefined || stat[0] === "Z" || Number(stat[1]) !== pid) return []
      const child = Number(entry)
      return [{ pid: child, command: commandOf(child) ?? "?" }]
    })

/** The live processes (not zombies) of process group `group`, with their command names. */
export const liveInGroup = (group: number): ReadonlyArray<{ readonly pid: number; readonly command: string }> =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((entry) => {
      const stat = statOf(entry)
      if (stat === undefined || stat[0] === "Z" || Number(stat[2]) !== group) return []
      const pid = Number(entry)
      return [{ pid, command: commandOf(pid) ?? "?" }]
    })
