/**
 * What `appexec run` says of an app name that no app has: the closest names the key can run
 * (by edit distance, in any case, or sharing a start), else the names it can run, and where the
 * whole list is.
 */
import type { App } from "@appexec/api"

/** The Levenshtein distance between `a` and `b` (insertions, deletions, substitutions). */
export const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    previous = current
  }
  return previous[b.length]!
}

/** Most names suggested. */
const MOST = 3

/** Most names listed when none is close. */
const LISTED = 10

/**
 * The names of `known` close to `name`, closest first: within about a third of its length in
 * edits (at least 2), or one starting with the other; in any case.
 */
export const closest = (name: string, known: ReadonlyArray<string>): ReadonlyArray<string> => {
  const wanted = name.toLowerCase()
  const reach = Math.max(2, Math.floor(wanted.length / 3))
  return [...new Set(known)]
    .map((candidate) => {
      const lower = candidate.toLowerCase()
      const prefix = lower.startsWith(wanted) || wanted.startsWith(lower)
      return { candidate, edits: distance(wanted, lower), prefix }
    })
    .filter(({ edits, prefix }) => prefix || edits <= reach)
    .sort((a, b) => a.edits - b.edits || a.candidate.localeCompare(b.candidate))
    .slice(0, MOST)
    .map(({ candidate }) => candidate)
}

/** The message for an app name `name` that none of `known` (the apps the key can run) has. */
export const unknownMessage = (name: string, known: ReadonlyArray<App.AppSummary>): string => {
  const names = known.map((app) => app.name)
  const near = closest(name, names)
  const quoted = (list: ReadonlyArray<string>) => list.map((n) => JSON.stringify(n)).join(", ")
  const listed = (list: ReadonlyArray<string>) =>
    list.length > LISTED ? `${quoted(list.slice(0, LISTED))}, …` : quoted(list)
  const hint = near.length > 0
    ? ` Did you mean ${quoted(near)}?`
    : names.length > 0
    ? ` This key can run: ${listed([...new Set(names)].sort((a, b) => a.localeCompare(b)))}.`
    : " This key can run no app yet."
  return `No app is named '${name}'.${hint} \`appexec apps list\` lists every app of the instance (run where serve runs).`
}
