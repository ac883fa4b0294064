/**
 * The status state machine of docs/api.md#execution-states as one pure function. Every status change of an
 * execution goes through `transition`; storage only persists what it returns.
 *
 *   (none) --accepted--> queued --Started--> running --Completed--> completed
 *                                                    \--Failed-----> failed
 */
import type { Output, OutputType } from "@appexec/api/Execution"
import { Either, Schema, type Types } from "effect"
import type { ExecutionRecord } from "./ExecutionRecord.js"

/** A value an output node produced. */
export interface ProducedOutput {
  readonly id: string
  readonly type: Exclude<OutputType, "pending">
  readonly value: string
}

/** An output that got no value: its id, its type and why. */
export interface FailedOutput {
  readonly id: string
  readonly type: Exclude<OutputType, "pending">
  readonly error: string
}

/** What can happen to an execution after it was accepted. */
export type ExecutionEvent =
  | { readonly _tag: "Started"; readonly at: number }
  /** One output produced while others are still pending (docs/api.md#live-executions). */
  | { readonly _tag: "OutputProduced"; readonly produced: ProducedOutput }
  /** One output failed while others are still pending. */
  | { readonly _tag: "OutputFailed" } & FailedOutput
  | { readonly _tag: "Completed"; readonly at: number; readonly produced: ReadonlyArray<ProducedOutput> }
  | {
    readonly _tag: "Failed"
    readonly at: number
    readonly errorMessage: string
    /** Outputs that were produced before the failure keep their values. */
    readonly produced: ReadonlyArray<ProducedOutput>
    /** Per-output errors; an output not produced and not listed gets `errorMessage`. */
    readonly outputErrors: Readonly<Record<string, string>>
    /** The declared type of each output, shown on outputs that were not produced. */
    readonly outputTypes: Readonly<Record<string, Exclude<OutputType, "pending">>>
  }

/** An event that the current status does not allow. */
export class InvalidTransition extends Schema.TaggedError<InvalidTransition>()("InvalidTransition", {
  from: Schema.String,
  event: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `Cannot apply ${this.event} to an execution that is ${this.from}: ${this.reason}`
  }
}

/** A pending output placeholder (docs/api.md#output): type and status `pending`, value null. */
export const placeholder = (id: string, label: string): Output => ({
  id,
  label,
  type: "pending",
  value: null,
  status: "pending",
  error: null
})

/** `completed` and `failed` are final (docs/api.md#execution-states). */
export const isTerminal = (status: ExecutionRecord["status"]): status is "completed" | "failed" =>
  status === "completed" || status === "failed"

const refuse = (record: ExecutionRecord, event: ExecutionEvent, reason: string) =>
  Either.left(new InvalidTransition({ from: record.status, event: event._tag, reason }))

/** What a transition changes in a record. */
type Changes = Partial<Pick<ExecutionRecord, "status" | "outputs" | "errorMessage" | "startedAt" | "completedAt">>

/**
 * `record` with `changes`, written out field by field. Records come in several shapes (each
 * optional field present or not, in the order their maker wrote them): past four shapes, a spread
 * (`{ ...record, status }`) leaves V8's fast copy and costs about a microsecond a transition.
 * A field added to `ExecutionRecord` is added here (the lifecycle test checks that none is lost).
 */
const changed = (record: ExecutionRecord, changes: Changes): ExecutionRecord => {
  const next: Types.Mutable<ExecutionRecord> = {
    executionId: record.executionId,
    workflowId: record.workflowId,
    appId: record.appId,
    workspaceId: record.workspaceId,
    userId: record.userId,
    status: changes.status ?? record.status,
    inputs: record.inputs,
    outputs: changes.outputs ?? record.outputs,
    errorMessage: changes.errorMessage !== undefined ? changes.errorMessage : record.errorMessage,
    webhookUrl: record.webhookUrl,
    createdAt: record.createdAt,
    startedAt: changes.startedAt !== undefined ? changes.startedAt : record.startedAt,
    completedAt: changes.completedAt !== undefined ? changes.completedAt : record.completedAt
  }
  if (record.webhookEvents !== undefined) next.webhookEvents = record.webhookEvents
  if (record.traceParent !== undefined) next.traceParent = record.traceParent
  if (record.priority !== undefined) next.priority = record.priority
  if (record.attempt !== undefined) next.attempt = record.attempt
  return next
}

/** An output settled: its id and label kept, the rest given (field by field, as `changed`). */
const settled = (
  output: Output,
  type: Output["type"],
  value: string | null,
  status: Output["status"],
  error: string | null
): Output => ({ id: output.id, label: output.label, type, value, status, error })

/** The last produced output of id `id`, by a look along them (an app has a few outputs). */
const producedOf = (produced: ReadonlyArray<ProducedOutput>, id: string): ProducedOutput | undefined => {
  for (let i = produced.length - 1; i >= 0; i--) if (produced[i]!.id === id) return produced[i]
  return undefined
}

const produce = (output: Output, produced: ProducedOutput): Output =>
  settled(output, produced.type, produced.value, "completed", null)

/**
 * Applies an event to an execution. Only the transitions of docs/api.md#execution-states are allowed:
 * queued→running (sets `startedAt`), running→running with one more output settled (produced, or
 * failed with its error) while others are pending, running→completed (every output produced, sets
 * `completedAt`), running→failed (sets `errorMessage`, `completedAt` and a per-output `error`
 * on every output that was not produced). Terminal states accept nothing.
 */
export const transition = (
  record: ExecutionRecord,
  event: ExecutionEvent
): Either.Either<ExecutionRecord, InvalidTransition> => {
  switch (event._tag) {
    case "Started": {
      if (record.status !== "queued") return refuse(record, event, "only a queued execution can start")
      return Either.right(changed(record, { status: "running", startedAt: event.at }))
    }
    case "OutputProduced":
    case "OutputFailed": {
      if (record.status !== "running") return refuse(record, event, "only a running execution settles outputs")
      const id = event._tag === "OutputProduced" ? event.produced.id : event.id
      if (!record.outputs.some((o) => o.id === id)) return refuse(record, event, `no output ${id}`)
      return Either.right(changed(record, {
        outputs: record.outputs.map((o): Output =>
          o.id !== id
            ? o
            : event._tag === "OutputProduced"
            ? produce(o, event.produced)
            : settled(o, event.type, null, "failed", event.error)
        )
      }))
    }
    case "Completed": {
      if (record.status !== "running") return refuse(record, event, "only a running execution can complete")
      const outputs: Array<Output> = []
      const missing: Array<string> = []
      for (const o of record.outputs) {
        const produced = producedOf(event.produced, o.id)
        if (produced === undefined) missing.push(o.id)
        else outputs.push(produce(o, produced))
      }
      if (missing.length > 0) return refuse(record, event, `outputs not produced: ${missing.join(", ")}`)
      return Either.right(changed(record, {
        status: "completed",
        outputs,
        errorMessage: null,
        completedAt: Math.max(event.at, record.startedAt ?? event.at)
      }))
    }
    case "Failed": {
      if (record.status !== "running") return refuse(record, event, "only a running execution can fail")
      if (event.errorMessage.length === 0) return refuse(record, event, "a failure needs an error message")
      return Either.right(changed(record, {
        status: "failed",
        outputs: record.outputs.map((o): Output => {
          const produced = producedOf(event.produced, o.id)
          return produced !== undefined
            ? produce(o, produced)
            : settled(
              o,
              event.outputTypes[o.id] ?? o.type,
              null,
              "failed",
              event.outputErrors[o.id] ?? event.errorMessage
            )
        }),
        errorMessage: event.errorMessage,
        completedAt: Math.max(event.at, record.startedAt ?? event.at)
      }))
    }
  }
}

/**
 * Fails an execution that has not finished, at `at`: a queued one is started and failed at the
 * same instant (it never ran), a running one is failed; no output keeps a value.
 */
export const failNow = (
  record: ExecutionRecord,
  at: number,
  errorMessage: string,
  outputTypes: Readonly<Record<string, Exclude<OutputType, "pending">>> = {}
): Either.Either<ExecutionRecord, InvalidTransition> =>
  Either.flatMap(
    record.status === "queued" ? transition(record, { _tag: "Started", at }) : Either.right(record),
    (running) => transition(running, { _tag: "Failed", at, errorMessage, produced: [], outputErrors: {}, outputTypes })
  )
