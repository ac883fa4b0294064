/**
 * What a run's page says of it beside its outputs: its timings (created, started, completed, the
 * time queued and the time it ran), its attempt and, while queued, its queue position and what it
 * waits for when something holds it back (`waitingFor`: a worker for a node type, a limit); and its
 * inputs as the server accepted them, each long one folded (`LongText`).
 */
import { Fragment } from "preact"
import type { ExecutionView } from "../../api/Wire.js"
import { LongText } from "../../components/LongText.js"
import { between, formatTime } from "../../components/Time.js"

/** The run's timings, attempt, queue position and what it waits for. */
const Timings = ({ execution }: { readonly execution: ExecutionView }) => (
  <dl class="facts" data-testid="run-timings">
    <dt>Created</dt>
    <dd>{formatTime(execution.createdAt)}</dd>
    <dt>Started</dt>
    <dd>{formatTime(execution.startedAt)}</dd>
    <dt>Completed</dt>
    <dd>{formatTime(execution.completedAt)}</dd>
    <dt>Queued for</dt>
    <dd>{between(execution.createdAt, execution.startedAt)}</dd>
    <dt>Ran for</dt>
    <dd>{between(execution.startedAt, execution.completedAt)}</dd>
    <dt>Attempt</dt>
    <dd data-testid="run-attempt">{execution.attempt ?? "—"}</dd>
    {execution.status === "queued" && execution.queuePosition !== undefined && (
      <>
        <dt>Queue position</dt>
        <dd data-testid="queue-position">
          {execution.queuePosition === 0
            ? "next in its workspace"
            : `${execution.queuePosition} ahead in its workspace`}
        </dd>
      </>
    )}
    {execution.status === "queued" && execution.waitingFor !== undefined && (
      <>
        <dt>Waiting for</dt>
        <dd data-testid="run-waiting">{execution.waitingFor}</dd>
      </>
    )}
  </dl>
)

/** The run's inputs. */
const Inputs = ({ inputs }: { readonly inputs: ExecutionView["inputs"] }) =>
  inputs === undefined
    ? <p class="notice quiet">The inputs of a run are not available on this server.</p>
    : Object.keys(inputs).length === 0
    ? <p class="empty">No inputs.</p>
    : (
      <dl class="facts inputs" data-testid="run-inputs">
        {Object.entries(inputs).map(([name, value]) => (
          <Fragment key={name}>
            <dt>{name}</dt>
            <dd data-input={name}>
              <LongText text={value} className="input-value" />
            </dd>
          </Fragment>
        ))}
      </dl>
    )

/** The timings and the inputs of `execution`, side by side where there is room. */
export const RunFacts = ({ execution }: { readonly execution: ExecutionView }) => (
  <div class="columns">
    <section class="card" aria-labelledby="timings-title">
      <h2 id="timings-title">Timings</h2>
      <Timings execution={execution} />
    </section>
    <section class="card" aria-labelledby="inputs-title">
      <h2 id="inputs-title">Inputs</h2>
      <Inputs inputs={execution.inputs} />
    </section>
  </div>
)
