/**
 * What the run form sends of its priority box (docs/scaling.md#priorities): an integer from -10
 * to 10 other than the default 0, else no priority at all, so that the request stays the
 * interface's own. The box itself is `PriorityField`.
 */

/** The lowest and highest priority a start may ask for: the API's (not bundled here; a test holds them equal). */
export const PRIORITY_MIN = -10
export const PRIORITY_MAX = 10

/** What the form sends of the box's `text`: an integer in range other than 0, else nothing. */
export const requestedPriority = (text: string): number | undefined => {
  const trimmed = text.trim()
  if (trimmed === "") return undefined
  const n = Number(trimmed)
  return Number.isInteger(n) && n !== 0 && n >= PRIORITY_MIN && n <= PRIORITY_MAX ? n : undefined
}
