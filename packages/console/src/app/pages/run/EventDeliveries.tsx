/**
 * The deliveries of a run's webhook, one per event it sent (docs/webhooks.md#events): its type,
 * its message id (`webhook-id`), when it was made, its status, its attempts and the last answer;
 * "Redeliver" on each one whose delivery is over sends that event once more.
 */
import type { EventDelivery } from "../../api/Wire.js"
import { shortId } from "../../components/ShortId.js"
import { formatTime } from "../../components/Time.js"

/** The last answer of a delivery: the receiver's status, or the error, or that none came yet. */
const lastAnswer = (delivery: EventDelivery) => {
  const last = delivery.attempts[delivery.attempts.length - 1]
  if (last === undefined) return "no attempt yet"
  return last.statusCode === null ? (last.error ?? "no answer") : String(last.statusCode)
}

/** The table of `deliveries`; `onRedeliver` sends one again (none while `busy`). */
export const EventDeliveries = (
  { busy, deliveries, events, onRedeliver }: {
    readonly deliveries: ReadonlyArray<EventDelivery>
    readonly events: ReadonlyArray<string>
    readonly busy: boolean
    readonly onRedeliver: (deliveryId: string) => void
  }
) => (
  <div class="delivery" data-testid="webhook-events">
    <dl class="facts">
      <dt>Events</dt>
      <dd>{events.map((event) => <code key={event} class="event-name">{event}</code>)}</dd>
    </dl>
    {deliveries.length === 0
      ? <p class="help">No event sent yet.</p>
      : (
        <div class="table-scroll">
          <table class="stacks">
            <caption>Deliveries by event</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Message</th>
                <th scope="col">Made</th>
                <th scope="col">Delivery</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last answer</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {deliveries.map((delivery) => (
                <tr key={delivery.id} data-event={delivery.type} data-status={delivery.status}>
                  <td data-label="Event">
                    <code>{delivery.type}</code>
                  </td>
                  <td data-label="Message" title={delivery.id}>
                    <code>{shortId(delivery.id)}</code>
                  </td>
                  <td data-label="Made">{formatTime(delivery.createdAt)}</td>
                  <td data-label="Delivery">
                    <span class={`badge delivery-${delivery.status}`}>{delivery.status}</span>
                  </td>
                  <td data-label="Attempts">{delivery.attempts.length}</td>
                  <td data-label="Last answer" class="break">{lastAnswer(delivery)}</td>
                  <td data-label="Actions">
                    {delivery.status !== "pending" && (
                      <button
                        type="button"
                        disabled={busy}
                        aria-label={`Redeliver ${delivery.type} ${shortId(delivery.id)}`}
                        onClick={() => onRedeliver(delivery.id)}
                      >
                        Redeliver
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
  </div>
)
