/**
 * A run's webhook (`GET /v1/executions/{id}/webhook`): its URL and delivery status, every attempt
 * with its time, the receiver's answer and the error, read again when the run ends and every few
 * seconds while a delivery is still being tried; "Redeliver webhook" once the
 * delivery is over (`POST …/webhook/redeliver`, a new signed attempt). A run that asked for more
 * events than its completion shows every event's delivery too (`EventDeliveries`), each
 * redelivered on its own (`?delivery=`).
 */
import { useEffect, useRef, useState } from "preact/hooks"
import { isNotAvailable } from "../../api/Api.js"
import { useApi, useRemote } from "../../api/Remote.js"
import type { WebhookDelivery } from "../../api/Wire.js"
import { Failure, Loading, messageOf } from "../../components/Feedback.js"
import { formatTime } from "../../components/Time.js"
import { EventDeliveries } from "./EventDeliveries.js"

/** How often a webhook that is still being delivered is read again. */
const DELIVERY_REFRESH_MS = 3_000

/** The delivery and its attempts. */
const Delivery = ({ delivery }: { readonly delivery: WebhookDelivery }) => (
  <div class="delivery" data-testid="webhook-delivery" data-status={delivery.status}>
    <dl class="facts">
      <dt>URL</dt>
      <dd class="break">{delivery.url}</dd>
      <dt>Delivery</dt>
      <dd>
        <span class={`badge delivery-${delivery.status}`}>{delivery.status}</span>
      </dd>
    </dl>
    {delivery.attempts.length === 0
      ? <p class="help">No attempt yet.</p>
      : (
        <div class="table-scroll">
          <table class="stacks">
            <caption>Attempts</caption>
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Time</th>
                <th scope="col">Answer</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {delivery.attempts.map((attempt, index) => (
                <tr key={`${attempt.at}-${index}`}>
                  <td data-label="#">{index + 1}</td>
                  <td data-label="Time">{formatTime(attempt.at)}</td>
                  <td data-label="Answer">{attempt.statusCode ?? "no answer"}</td>
                  <td data-label="Error" class="break">{attempt.error ?? "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
  </div>
)

/** The webhook of the run `executionId`, which is `finished` or not. */
export const RunWebhook = ({ executionId, finished }: { readonly executionId: string; readonly finished: boolean }) => {
  const api = useApi()
  const [delivery, reload, setDelivery] = useRemote((signal) => api.executions.webhook(executionId, signal), [
    executionId
  ])
  const [said, setSaid] = useState<{ readonly text: string; readonly error: boolean } | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  // A run that ends while it is shown has its delivery read again: it has just begun.
  const wasFinished = useRef(finished)
  useEffect(() => {
    if (!wasFinished.current && finished) reload()
    wasFinished.current = finished
  }, [finished])
  const pending = delivery.state === "ready" && delivery.value !== null && delivery.value.status === "pending"
  const value = delivery.state === "ready" ? delivery.value : null
  // The events beyond the completion: their deliveries are listed, and followed while the run goes.
  const events = value?.events ?? []
  const hasEvents = events.some((event) => event !== "completed")
  const eventsPending = (value?.deliveries ?? []).some((d) => d.status === "pending")
  useEffect(() => {
    if (!((pending && finished) || (hasEvents && (!finished || eventsPending)))) return
    const timer = setInterval(reload, DELIVERY_REFRESH_MS)
    return () => clearInterval(timer)
  }, [pending, finished, hasEvents, eventsPending])

  const redeliver = async (deliveryId?: string) => {
    setBusy(true)
    setSaid(undefined)
    try {
      setDelivery(await api.executions.redeliver(executionId, deliveryId))
      setSaid({ text: "Redelivery started: a new attempt is on its way.", error: false })
    } catch (error) {
      setSaid({
        text: isNotAvailable(error) ? "Redelivery is not available on this server." : messageOf(error),
        error: !isNotAvailable(error)
      })
    } finally {
      setBusy(false)
    }
  }
  // The server redelivers a webhook whose delivery is over (delivered or given up), not one still being tried.
  const redeliverable = finished && value !== null && !pending && events.includes("completed")

  return (
    <section aria-labelledby="webhook-title">
      <h2 id="webhook-title">Webhook</h2>
      {delivery.state === "loading" && <Loading what="the webhook" />}
      {delivery.state === "failed" && (
        <Failure error={delivery.error} what="the webhook's delivery" feature="The webhook's delivery" />
      )}
      {delivery.state === "ready" && delivery.value === null && <p class="empty">This run has no webhook.</p>}
      {value !== null && <Delivery delivery={value} />}
      {finished && pending && <p class="help">It can be redelivered once this delivery is over.</p>}
      {redeliverable && (
        <div class="actions">
          <button type="button" onClick={() => redeliver()} disabled={busy}>
            Redeliver webhook
          </button>
        </div>
      )}
      {value !== null && hasEvents && (
        <EventDeliveries
          events={events}
          deliveries={value.deliveries ?? []}
          busy={busy}
          onRedeliver={(deliveryId) => redeliver(deliveryId)}
        />
      )}
      {said !== undefined && (
        <p class={`notice ${said.error ? "error" : ""}`} role={said.error ? "alert" : "status"}>
          {said.text}
        </p>
      )}
    </section>
  )
}
