/**
 * Times as a person reads them: a timestamp in the browser's locale, a duration in the largest
 * units that say it (`850 ms`, `4.2 s`, `3 min 5 s`, `2 h 10 min`).
 */

/** A timestamp of the API (ISO 8601 UTC) in the browser's locale and time zone; "—" for none. */
export const formatTime = (iso: string | null | undefined): string => {
  if (iso === null || iso === undefined) return "—"
  const date = new Date(iso)
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString()
}

/** A duration in milliseconds. */
export const formatDuration = (ms: number): string => {
  if (!Number.isFinite(ms) || ms < 0) return "—"
  if (ms < 1_000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1_000).toFixed(ms < 10_000 ? 1 : 0)} s`
  const seconds = Math.round(ms / 1_000)
  if (seconds < 3_600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`
  return `${Math.floor(seconds / 3_600)} h ${Math.floor((seconds % 3_600) / 60)} min`
}

/** The time between two timestamps; "—" when either is missing. */
export const between = (from: string | null | undefined, to: string | null | undefined): string =>
  from === null || from === undefined || to === null || to === undefined
    ? "—"
    : formatDuration(new Date(to).getTime() - new Date(from).getTime())
