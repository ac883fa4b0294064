/**
 * The events a run's webhook receives (docs/webhooks.md#events), picked with one checkbox each:
 * `start`, `output`, `logs`, `completed`; `completed` alone by default, which the form sends as no
 * choice at all, so that the request stays the interface's own.
 */
import type { WebhookEvent } from "../api/Wire.js"

/** The events, in the order of a run's life, with what each sends. */
export const EVENTS: ReadonlyArray<{ readonly event: WebhookEvent; readonly says: string }> = [
  { event: "start", says: "when it starts running" },
  { event: "output", says: "when its outputs change (at most every 500 ms)" },
  { event: "logs", says: "the lines its nodes log (at most every 500 ms)" },
  { event: "completed", says: "when it ends, completed or failed" }
]

/** The events of a webhook given none: the completion alone. */
export const DEFAULT_EVENTS: ReadonlyArray<WebhookEvent> = ["completed"]

/** What the form sends of `picked`: none when it is the default (the request stays as it always was). */
export const requestedEvents = (picked: ReadonlyArray<WebhookEvent>): ReadonlyArray<WebhookEvent> | undefined =>
  picked.length === DEFAULT_EVENTS.length && picked.every((e) => DEFAULT_EVENTS.includes(e))
    ? undefined
    : EVENTS.map((e) => e.event).filter((e) => picked.includes(e))

/** The checkboxes of the events; `onChange` gets the events picked, in their order. */
export const WebhookEvents = (
  { onChange, picked }: {
    readonly picked: ReadonlyArray<WebhookEvent>
    readonly onChange: (picked: ReadonlyArray<WebhookEvent>) => void
  }
) => (
  <fieldset class="webhook-events" data-testid="webhook-events">
    <legend>Events</legend>
    {EVENTS.map(({ event, says }) => (
      <label key={event} class="check">
        <input
          type="checkbox"
          name="webhookEvents"
          value={event}
          checked={picked.includes(event)}
          onChange={(changed) =>
            onChange(
              EVENTS.map((e) => e.event).filter((e) => e === event ? changed.currentTarget.checked : picked.includes(e))
            )}
        />
        <code>{event}</code> <span class="help">{says}</span>
      </label>
    ))}
  </fieldset>
)
