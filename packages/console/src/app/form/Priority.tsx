/**
 * The priority of a run (docs/scaling.md#priorities), folded away under the inputs: a number box
 * from -10 to 10, empty for the default (0), which the form sends as no priority at all, so that
 * the request stays the interface's own. The server says when the workspace may not go so high.
 */

/** The lowest and highest priority a start may ask for. */
export const PRIORITY_MIN = -10
export const PRIORITY_MAX = 10

/** What the form sends of the box's `text`: an integer in range other than 0, else nothing. */
export const requestedPriority = (text: string): number | undefined => {
  const trimmed = text.trim()
  if (trimmed === "") return undefined
  const n = Number(trimmed)
  return Number.isInteger(n) && n !== 0 && n >= PRIORITY_MIN && n <= PRIORITY_MAX ? n : undefined
}

/** The folded priority box; `onInput` gets the text as typed. */
export const Priority = (
  { onInput, value }: { readonly value: string; readonly onInput: (text: string) => void }
) => (
  <details class="field priority-field" open={value.trim() !== ""} data-testid="priority-field">
    <summary>Priority</summary>
    <label for="run-priority">Priority</label>
    <input
      id="run-priority"
      name="priority"
      type="number"
      inputMode="numeric"
      min={PRIORITY_MIN}
      max={PRIORITY_MAX}
      step={1}
      placeholder="0"
      value={value}
      aria-describedby="run-priority-help"
      onInput={(event) => onInput(event.currentTarget.value)}
    />
    <p class="help" id="run-priority-help">
      Optional, {PRIORITY_MIN} to {PRIORITY_MAX} (default 0): each step goes before runs up to a minute older.
    </p>
  </details>
)
