/**
 * The form of an app, generated from its parameters: one field per parameter, labelled with its
 * `label` (else its name), its `description` as help text, `options` as a select, its default
 * filled in, required ones marked; a `text` one a box of one line unless `multiline` (`TextField`:
 * Enter, or Ctrl+Enter in a multi-line box, runs), a `url` one a URL box with a file picker and a
 * drop zone that upload (`UrlField`). An optional webhook URL, and the events it receives
 * (`WebhookEvents`), and a priority (`PriorityField`), each folded away. "Run" starts the execution
 * (`POST /v1/apps/{appId}/executions`) once no upload is under way; the server's `invalid_inputs`
 * problems are shown at their fields.
 */
import type { ComponentChildren } from "preact"
import { useState } from "preact/hooks"
import { ApiError, type InputProblem } from "../api/Api.js"
import { useApi } from "../api/Remote.js"
import type { AppDetail, Parameter, WebhookEvent } from "../api/Wire.js"
import { messageOf } from "../components/Feedback.js"
import { inputsOf, nameOf, problemText, startingValues } from "./Inputs.js"
import { requestedPriority } from "./Priority.js"
import { PriorityField } from "./PriorityField.js"
import { type FieldAttributes, TextField } from "./TextField.js"
import { UrlField } from "./UrlField.js"
import { DEFAULT_EVENTS, requestedEvents, WebhookEvents } from "./WebhookEvents.js"

/** What the form would send. */
export interface FormRequest {
  readonly inputs: Readonly<Record<string, string>>
  readonly webhook: string | undefined
  /** The webhook's events; none when they are the default (the completion alone). */
  readonly webhookEvents: ReadonlyArray<WebhookEvent> | undefined
  /** The priority; none when it is the default (0) or not a valid one. */
  readonly priority: number | undefined
}

/** One field of the form. */
const Field = (
  { index, onInput, onUploading, parameter, problem, value }: {
    readonly index: number
    readonly parameter: Parameter
    readonly value: string
    readonly problem: string | undefined
    readonly onInput: (value: string) => void
    readonly onUploading: (uploading: boolean) => void
  }
) => {
  const id = `input-${index}`
  // The input's name is said under a label that differs from it in more than case.
  const namesInput = parameter.label !== undefined && parameter.label.toLowerCase() !== parameter.name.toLowerCase()
  const help = parameter.description !== undefined || namesInput
  const described = [help ? `${id}-help` : "", problem === undefined ? "" : `${id}-problem`].filter((s) => s !== "")
  const common: FieldAttributes = {
    id,
    name: parameter.name,
    required: parameter.required,
    "aria-describedby": described.length === 0 ? undefined : described.join(" "),
    "aria-invalid": problem === undefined ? undefined : true
  }
  // The help and the server's problem: under the box, or under a URL box's picker, before the upload.
  const notes = (
    <>
      {help && (
        <p class="help" id={`${id}-help`}>
          {parameter.description}
          {namesInput && (
            <span class="param-name">
              {parameter.description === undefined ? "" : " "}Input <code>{parameter.name}</code>
            </span>
          )}
        </p>
      )}
      {problem !== undefined && (
        <p class="field-problem" id={`${id}-problem`}>
          {problem}
        </p>
      )}
    </>
  )
  return (
    <div class="field" data-parameter={parameter.name}>
      <label for={id}>
        {nameOf(parameter)}
        {parameter.required && <span class="required" aria-hidden="true">*</span>}
      </label>
      {parameter.type === "options"
        ? (
          <select {...common} value={value} onChange={(event) => onInput(event.currentTarget.value)}>
            {(!parameter.required || parameter.default === undefined) && <option value="">—</option>}
            {(parameter.options ?? []).map((option) => <option key={option} value={option}>{option}</option>)}
          </select>
        )
        : parameter.type === "url"
        ? (
          <UrlField
            attributes={common}
            parameter={parameter}
            name={nameOf(parameter)}
            value={value}
            notes={notes}
            onInput={onInput}
            onUploading={onUploading}
          />
        )
        : <TextField attributes={common} parameter={parameter} value={value} onInput={onInput} />}
      {parameter.type !== "url" && notes}
    </div>
  )
}

/**
 * The form of `app`, prefilled with `initial` (a run's inputs) where given. `children` renders
 * below it with what the form would send (the request snippets).
 */
export const RunForm = (
  { app, children, initial, initialWebhook, onStarted, submitLabel = "Run", testId }: {
    readonly app: AppDetail
    /** The form's `data-testid`. */
    readonly testId: string
    readonly initial?: Readonly<Record<string, string>> | undefined
    readonly initialWebhook?: string | undefined
    readonly submitLabel?: string
    readonly onStarted: (executionId: string) => void
    readonly children?: (request: FormRequest) => ComponentChildren
  }
) => {
  const api = useApi()
  const [values, setValues] = useState(() => startingValues(app.parameters, initial))
  const [webhook, setWebhook] = useState(initialWebhook ?? "")
  const [events, setEvents] = useState<ReadonlyArray<WebhookEvent>>(DEFAULT_EVENTS)
  const [priority, setPriority] = useState("")
  const [busy, setBusy] = useState(false)
  const [problems, setProblems] = useState<ReadonlyArray<InputProblem>>([])
  const [error, setError] = useState<string | undefined>(undefined)
  // The parameters whose upload is under way: the form runs once they are done.
  const [uploading, setUploading] = useState<ReadonlySet<string>>(new Set())
  const hook = webhook.trim() === "" ? undefined : webhook.trim()
  const request: FormRequest = {
    inputs: inputsOf(app.parameters, values),
    webhook: hook,
    // Events go with a webhook only: without one, there is nothing to send them to.
    webhookEvents: hook === undefined ? undefined : requestedEvents(events),
    priority: requestedPriority(priority)
  }

  const submit = async (event: Event) => {
    event.preventDefault()
    if (busy || uploading.size > 0) return
    setBusy(true)
    setError(undefined)
    setProblems([])
    try {
      const started = await api.executions.start(app.appId, request.inputs, {
        webhook: request.webhook,
        webhookEvents: request.webhookEvents,
        priority: request.priority
      })
      onStarted(started.executionId)
    } catch (failure) {
      setBusy(false)
      if (failure instanceof ApiError && failure.problems.length > 0) setProblems(failure.problems)
      setError(messageOf(failure))
    }
  }

  const problemOf = (name: string) => {
    const found = problems.find((p) => p.parameter === name)
    return found === undefined ? undefined : problemText(found)
  }
  const extraProblems = problems.filter((p) => !app.parameters.some((q) => q.name === p.parameter))

  return (
    <form class="run-form" onSubmit={submit} data-testid={testId}>
      {app.parameters.length === 0 && <p class="help">This app takes no inputs.</p>}
      {app.parameters.map((parameter, index) => (
        <Field
          key={parameter.name}
          index={index}
          parameter={parameter}
          value={values[parameter.name] ?? ""}
          problem={problemOf(parameter.name)}
          onInput={(value) => setValues((current) => ({ ...current, [parameter.name]: value }))}
          onUploading={(on) =>
            setUploading((current) => {
              const next = new Set(current)
              if (on) next.add(parameter.name)
              else next.delete(parameter.name)
              return next
            })}
        />
      ))}
      <details class="field webhook-field" open={initialWebhook !== undefined && initialWebhook !== ""}>
        <summary>Webhook</summary>
        <label for="webhook-url">Webhook URL</label>
        <input
          id="webhook-url"
          name="webhook"
          type="url"
          inputMode="url"
          placeholder="https://…"
          value={webhook}
          aria-describedby="webhook-url-help"
          onInput={(event) => setWebhook(event.currentTarget.value)}
        />
        <p class="help" id="webhook-url-help">
          Optional: an http(s) URL that receives the signed result when the run ends.
        </p>
        <WebhookEvents picked={events} onChange={setEvents} />
      </details>
      <PriorityField value={priority} onInput={setPriority} />
      {app.parameters.some((p) => p.required) && (
        <p class="help">
          <span class="required" aria-hidden="true">*</span> required
        </p>
      )}
      {error !== undefined && (
        <div class="notice error" role="alert">
          <p>{error}</p>
          {extraProblems.length > 0 && (
            <ul>
              {extraProblems.map((p) => <li key={p.parameter}>{p.parameter}: {problemText(p)}</li>)}
            </ul>
          )}
        </div>
      )}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy || uploading.size > 0} aria-busy={busy}>
          {submitLabel}
        </button>
        {uploading.size > 0 && <span class="help">Waiting for the upload to finish…</span>}
      </div>
      {children?.(request)}
    </form>
  )
}
