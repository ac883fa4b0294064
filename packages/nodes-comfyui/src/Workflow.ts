/**
 * ComfyUI workflows in API format (ComfyUI's "Export (API)"): an object of nodes by id, each a
 * `class_type` and its `inputs` (values, or links `[nodeId, outputIndex]`), with an optional
 * `_meta.title`. A UI-format export (the editor's `nodes` and `links` arrays) is refused with
 * the way to make the right one. Inputs are named `nodeId.inputName` or `title.inputName`; a
 * value set there takes the type of the value the workflow holds (a number stays a number). The
 * ComfyUI `prompt_id` of a run is derived from the execution and the node, so that every attempt
 * of one execution names the same prompt.
 */
import type { NodeType } from "@appexec/core"
import { Either, ParseResult, Schema } from "effect"
import { createHash } from "node:crypto"

/** One node of an API-format workflow. */
export const WorkflowNode = Schema.Struct({
  class_type: Schema.NonEmptyString,
  inputs: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  _meta: Schema.optional(Schema.Struct({ title: Schema.optional(Schema.String) }))
})
export type WorkflowNode = typeof WorkflowNode.Type

/** An API-format workflow: nodes by id. */
export type Workflow = Readonly<Record<string, WorkflowNode>>

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The message that refuses a UI-format export. */
export const UI_FORMAT =
  "this is a ComfyUI workflow in UI format (nodes and links arrays); in ComfyUI, use Workflow → \"Export (API)\" and give that file"

/** The API-format workflow in `value`, or why it is none (a UI export is named as such). */
export const decode = (value: unknown): Either.Either<Workflow, string> => {
  if (!isRecord(value)) return Either.left("the workflow must be a JSON object of nodes by id")
  if (Array.isArray(value["nodes"]) && Array.isArray(value["links"])) return Either.left(UI_FORMAT)
  if (Object.keys(value).length === 0) return Either.left("the workflow has no nodes")
  const nodes: Record<string, WorkflowNode> = {}
  for (const [id, node] of Object.entries(value)) {
    const decoded = Schema.decodeUnknownEither(WorkflowNode)(node)
    if (Either.isLeft(decoded)) {
      return Either.left(
        `workflow node '${id}' is not an API-format node (class_type and inputs): ${
          ParseResult.TreeFormatter.formatErrorSync(decoded.left).split("\n").at(-1)?.trim()
        }`
      )
    }
    nodes[id] = decoded.right
  }
  for (const [id, node] of Object.entries(nodes)) {
    for (const [name, input] of Object.entries(node.inputs)) {
      if (isLink(input) && nodes[input[0]] === undefined) {
        return Either.left(`workflow node '${id}' input '${name}' links to node '${input[0]}', which is not in it`)
      }
    }
  }
  return Either.right(nodes)
}

/** A schema of the config field: any JSON object, checked by `decode`. */
export const WorkflowField = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** A `{{nodeId}}` placeholder of an input's template (global: every one). */
export const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_-]+)\s*\}\}/g

/** The node ids the `{{nodeId}}` placeholders of an input's template name. */
export const placeholdersIn = (template: string): Array<string> => [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!)

/** Whether an input value is a link `[nodeId, outputIndex]` to another node's output. */
export const isLink = (value: unknown): value is readonly [string, number] =>
  Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && typeof value[1] === "number"

/** Where an input goes: a node of the workflow and one of its inputs. */
export interface Target {
  readonly nodeId: string
  readonly input: string
  readonly classType: string
  /** The value the workflow holds there (undefined for a new input). */
  readonly current: unknown
}

/**
 * The target `name` points at: `nodeId.input` or `title.input` (the part before the last dot
 * names the node: its id, else the one node whose `_meta.title` it is). A linked input cannot
 * be set: it is another node's output.
 */
export const targetOf = (workflow: Workflow, name: string): Either.Either<Target, string> => {
  const dot = name.lastIndexOf(".")
  if (dot <= 0 || dot === name.length - 1) {
    return Either.left(`input '${name}' must be nodeId.inputName or title.inputName`)
  }
  const node = name.slice(0, dot)
  const input = name.slice(dot + 1)
  let nodeId = workflow[node] === undefined ? undefined : node
  if (nodeId === undefined) {
    const titled = Object.keys(workflow).filter((id) => workflow[id]!._meta?.title === node)
    if (titled.length > 1) return Either.left(`input '${name}': ${titled.length} nodes are titled '${node}'`)
    nodeId = titled[0]
  }
  if (nodeId === undefined) return Either.left(`input '${name}': the workflow has no node '${node}' (by id or title)`)
  const current = workflow[nodeId]!.inputs[input]
  if (isLink(current)) {
    return Either.left(`input '${name}' is linked to node '${current[0]}' in the workflow, so it cannot be set`)
  }
  return Either.right({ nodeId, input, classType: workflow[nodeId]!.class_type, current })
}

/** `text` as the type of `current` (a number, a boolean, else text), or why it cannot be. */
export const valueAs = (current: unknown, text: string): Either.Either<unknown, string> => {
  if (typeof current === "number") {
    const n = Number(text.trim())
    return text.trim() === "" || !Number.isFinite(n)
      ? Either.left(`'${text.slice(0, 40)}' is not a number`)
      : Either.right(n)
  }
  if (typeof current === "boolean") {
    const t = text.trim().toLowerCase()
    return t === "true" || t === "false"
      ? Either.right(t === "true")
      : Either.left(`'${text.slice(0, 40)}' is not true or false`)
  }
  return Either.right(text)
}

/** `workflow` with `values` set at their targets (a new object; the workflow is not changed). */
export const withValues = (
  workflow: Workflow,
  values: ReadonlyArray<{ readonly target: Target; readonly value: unknown }>
): Workflow => {
  const inputs = new Map(Object.entries(workflow).map(([id, node]) => [id, { ...node.inputs }]))
  for (const { target, value } of values) inputs.get(target.nodeId)![target.input] = value
  return Object.fromEntries(Object.entries(workflow).map(([id, node]) => [id, { ...node, inputs: inputs.get(id)! }]))
}

/** The output nodes' ids in the workflow's id order (numeric ids numerically). */
export const nodeIds = (workflow: Workflow): Array<string> =>
  Object.keys(workflow).sort((a, b) => {
    const x = Number(a)
    const y = Number(b)
    return Number.isInteger(x) && Number.isInteger(y) ? x - y : a.localeCompare(b)
  })

/**
 * The ComfyUI `prompt_id` of node `nodeId` in execution `executionId`: a canonical lowercase
 * UUID (version 5 layout) from a SHA-1 of both, so every attempt of an execution names the same
 * prompt and two ComfyUI nodes of one app name two.
 */
export const promptIdOf = (executionId: string, nodeId: string): string => {
  const bytes = createHash("sha1").update(`appexec:comfyui:${executionId}:${nodeId}`).digest().subarray(0, 16)
  bytes[6] = (bytes[6]! & 0x0f) | 0x50
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = bytes.toString("hex")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/**
 * The workflow as the app's workflow graph shows it in the node's place: each ComfyUI node (its
 * `class_type` as type, its title as label), each link as an edge; the upstream nodes of `inputs`
 * entering the nodes they set, the output nodes (no link out; `outputNode` when given) its exits.
 */
export const innerGraphOf = (
  workflow: Workflow,
  inputs: Readonly<Record<string, string>>,
  outputNode?: string
): NodeType.InnerGraph => {
  const ids = nodeIds(workflow)
  const edges: Array<{ readonly source: string; readonly target: string }> = []
  for (const id of ids) {
    for (const value of Object.values(workflow[id]!.inputs)) {
      if (isLink(value) && !edges.some((e) => e.source === value[0] && e.target === id)) {
        edges.push({ source: value[0], target: id })
      }
    }
  }
  const wanted = outputNode === undefined ? undefined : Either.getOrUndefined(targetOf(workflow, `${outputNode}.x`))
  const exits = wanted !== undefined ? [wanted.nodeId] : ids.filter((id) => !edges.some((e) => e.source === id))
  return {
    nodes: ids.map((id) => ({
      id,
      type: workflow[id]!.class_type,
      label: workflow[id]!._meta?.title ?? workflow[id]!.class_type
    })),
    edges,
    entries: (upstream) =>
      Object.entries(inputs).flatMap(([name, template]) =>
        placeholdersIn(template).includes(upstream)
          ? Either.match(targetOf(workflow, name), { onLeft: () => [], onRight: (t) => [t.nodeId] })
          : []
      ),
    exits
  }
}
