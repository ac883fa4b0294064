/**
 * Follows one prompt on a ComfyUI server to its end: the websocket's events while it is open
 * (`executing`, `execution_cached`, `progress`, `progress_state` become the node's progress per
 * ComfyUI node; `executed` a log line and the run's `executed` (its partial results); preview
 * frames become the node's live previews, and are counted), and the server asked about
 * the prompt (`ComfyApi.lookup`) whenever the socket is quiet for `pollInterval` or closed — the
 * socket is opened again at each poll. The end is the prompt's history entry; `execution_error`
 * fails with the node type and the exception; `execution_interrupted` fails as interrupted. A
 * prompt the server no longer knows (it restarted: history and queue lost) is submitted again
 * once, logged; a second loss fails.
 */
import { NodeType, type OutboundHttp } from "@appexec/core"
import { type Duration, Effect, ExecutionStrategy, Exit, Option, type Queue, Schema, Scope } from "effect"
import type { Workflow } from "../Workflow.js"
import * as ComfyApi from "./ComfyApi.js"
import * as ComfySocket from "./ComfySocket.js"

/** What a follow needs to know and to do. */
export interface Run {
  readonly server: ComfyApi.Server
  readonly promptId: string
  readonly clientId: string
  readonly workflow: Workflow
  readonly pollInterval: Duration.DurationInput
  /** What is done once the socket is open (or could not be): the submit, or nothing when re-attaching. */
  readonly start: Effect.Effect<void, NodeType.NodeFailure, OutboundHttp.OutboundHttp>
  /** Submits the prompt again (the server lost it). */
  readonly resubmit: Effect.Effect<void, NodeType.NodeFailure, OutboundHttp.OutboundHttp>
  readonly progress: NodeType.NodeContext<unknown>["progress"]
  readonly log: NodeType.NodeContext<unknown>["log"]
  readonly preview: NodeType.NodeContext<unknown>["preview"]
  /** Takes the files of an `executed` event (`Partials`); never fails. */
  readonly executed: (
    node: string,
    output: Readonly<Record<string, unknown>>
  ) => Effect.Effect<void, never, OutboundHttp.OutboundHttp>
}

const fail = (message: string) => new NodeType.NodeFailure({ message })

const text = (value: unknown) => (typeof value === "string" ? value : value === undefined ? "" : String(value))

/** The failure of an `execution_error` event's data: the node, its type, the exception. */
export const errorOf = (data: Readonly<Record<string, unknown>>) =>
  fail(
    `ComfyUI node ${text(data["node_id"])} (${text(data["node_type"])}) failed: ${
      text(data["exception_type"]) === "" ? "" : `${text(data["exception_type"])}: `
    }${text(data["exception_message"]).trim().slice(0, 500)}`
  )

const interruptedOf = (data: Readonly<Record<string, unknown>>) =>
  fail(
    `the prompt was interrupted on the ComfyUI server (at node ${text(data["node_id"])}, ${text(data["node_type"])})`
  )

/** `value` when it is a JSON object, else an empty one. */
const recordOf = (value: unknown): Readonly<Record<string, unknown>> =>
  Option.getOrElse(
    Schema.decodeUnknownOption(Schema.Record({ key: Schema.String, value: Schema.Unknown }))(value),
    () => ({})
  )

/** The end a finished history entry says: the entry, or the failure of its error or interrupt. */
export const endOf = (entry: ComfyApi.HistoryEntry) => {
  if (entry.status === undefined || entry.status.status_str === "success") return Effect.succeed(entry)
  const message = entry.status.messages.find(([type]) => type === "execution_error" || type === "execution_interrupted")
  const data = recordOf(message?.[1])
  return Effect.fail(
    message?.[0] === "execution_interrupted"
      ? interruptedOf(data)
      : message === undefined
      ? fail(`the prompt ended with status ${entry.status.status_str} on the ComfyUI server`)
      : errorOf(data)
  )
}

/** Follows `run` to its history entry. */
export const follow = (run: Run) =>
  Effect.gen(function*() {
    const ids = Object.keys(run.workflow)
    const done = new Set<string>()
    let current: string | undefined
    let previews = 0
    let resubmitted = false
    let socket: Option.Option<Queue.Dequeue<ComfySocket.Message>> = Option.none()
    const outer = yield* Effect.scope
    // Each socket lives in a scope of its own, closed when the next one is opened.
    let socketScope: Scope.CloseableScope | undefined

    const classOf = (node: string) => run.workflow[node]?.class_type ?? "?"
    const report = (node: string, fraction: number, message: string) =>
      run.progress(
        (done.size + Math.max(0, Math.min(1, fraction))) / Math.max(1, ids.length),
        `${classOf(node)} (node ${node}) ${message}`.trim()
      )

    const reopen = Effect.gen(function*() {
      if (socketScope !== undefined) yield* Scope.close(socketScope, Exit.void)
      socketScope = yield* Scope.fork(outer, ExecutionStrategy.sequential)
      return yield* ComfySocket.open(run.server.url, run.clientId, run.pollInterval, run.server.headers).pipe(
        Scope.extend(socketScope),
        Effect.option
      )
    })

    /** Handles one event: the history entry when it ends the run, a failure, or nothing. */
    const onEvent = (type: string, data: Readonly<Record<string, unknown>>) =>
      Effect.gen(function*() {
        if ("prompt_id" in data && data["prompt_id"] !== run.promptId) return Option.none()
        switch (type) {
          case "execution_cached":
            for (const node of Array.isArray(data["nodes"]) ? data["nodes"] : []) done.add(String(node))
            return Option.none()
          case "executing": {
            const node = data["node"]
            if (typeof node !== "string") {
              // `{node: null, prompt_id}`: the run is over and its history written.
              if (data["prompt_id"] === run.promptId) return yield* poll
              return Option.none()
            }
            if (current !== undefined && current !== node) done.add(current)
            current = node
            yield* report(node, 0, "running")
            return Option.none()
          }
          case "progress": {
            const node = text(data["node"] ?? current)
            const value = Number(data["value"])
            const max = Number(data["max"])
            if (max > 0) yield* report(node, value / max, `${value}/${max}`)
            return Option.none()
          }
          case "progress_state": {
            for (const [node, value] of Object.entries(recordOf(data["nodes"]))) {
              const state = recordOf(value)
              if (state["state"] === "finished") done.add(node)
              else if (state["state"] === "running" && Number(state["max"]) > 0 && node === current) {
                yield* report(node, Number(state["value"]) / Number(state["max"]), `${state["value"]}/${state["max"]}`)
              }
            }
            return Option.none()
          }
          case "executed": {
            const node = text(data["node"])
            const output = data["output"]
            const files = typeof output === "object" && output !== null
              ? Object.values(output).flatMap((v) => (Array.isArray(v) ? v : [])).length
              : 0
            yield* run.log(`ComfyUI node ${node} (${classOf(node)}) produced ${files} file${files === 1 ? "" : "s"}`)
            if (files > 0) yield* run.executed(node, recordOf(output))
            return Option.none()
          }
          case "execution_success":
            return yield* poll
          case "execution_error":
            return yield* Effect.fail(errorOf(data))
          case "execution_interrupted":
            return yield* Effect.fail(interruptedOf(data))
          default:
            return Option.none()
        }
      })

    /** Asks the server about the prompt: its entry when done; submits again once when it was lost. */
    const poll: Effect.Effect<
      Option.Option<ComfyApi.HistoryEntry>,
      NodeType.NodeFailure,
      OutboundHttp.OutboundHttp
    > = Effect.gen(function*() {
      const known = yield* ComfyApi.lookup(run.server, run.promptId).pipe(
        Effect.tapError((failure) => run.log(`${failure.message}; asking again`, "warn")),
        Effect.option
      )
      if (Option.isNone(known)) return Option.none()
      switch (known.value._tag) {
        case "Done":
          return Option.some(yield* endOf(known.value.entry))
        case "Unknown":
          if (resubmitted) {
            return yield* Effect.fail(
              fail("the ComfyUI server lost the prompt twice (it restarted); not submitted a third time")
            )
          }
          resubmitted = true
          yield* run.log(
            `the ComfyUI server ${
              ComfyApi.hostOf(run.server.url)
            } no longer knows prompt ${run.promptId} (it restarted): submitting it again, once`,
            "warn"
          )
          done.clear()
          yield* run.resubmit
          return Option.none()
        default:
          return Option.none()
      }
    })

    socket = yield* reopen
    if (Option.isNone(socket)) yield* run.log("the ComfyUI websocket could not be opened: polling", "warn")
    yield* run.start
    while (true) {
      let message: Option.Option<ComfySocket.Message> = Option.none()
      if (Option.isSome(socket)) {
        message = yield* socket.value.take.pipe(Effect.timeout(run.pollInterval), Effect.option)
      } else {
        yield* Effect.sleep(run.pollInterval)
        socket = yield* reopen
      }
      if (Option.isSome(message)) {
        const m = message.value
        if (m._tag === "Preview") {
          previews++
          yield* run.preview(m.bytes, m.contentType)
          continue
        }
        if (m._tag === "Closed") {
          socket = Option.none()
          yield* run.log("the ComfyUI websocket closed: polling until it opens again", "warn")
        } else {
          const end = yield* onEvent(m.type, m.data)
          if (Option.isSome(end)) return { entry: end.value, previews }
          continue
        }
      }
      const end = yield* poll
      if (Option.isSome(end)) return { entry: end.value, previews }
    }
  })
