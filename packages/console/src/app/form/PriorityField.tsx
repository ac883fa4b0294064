/**
 * The priority of a run, folded away under the inputs: a number box from -10 to 10, empty for
 * the default (0). The server says when the workspace may not go so high.
 */
import { PRIORITY_MAX, PRIORITY_MIN } from "./Priority.js"

/** The folded priority box; `onInput` gets the text as typed. */
export const PriorityField = (
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
