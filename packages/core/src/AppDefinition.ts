/**
 * App definitions (docs/apps.md): the file an operator writes, and its compilation into a checked
 * workflow with derived parameters and outputs. Every problem is reported at once, each naming
 * the node it concerns.
 */
import type { WorkflowEdge } from "@appexec/api/App"
import type { OutputType } from "@appexec/api/Execution"
import { type AppId, ParameterId, WorkflowId } from "@appexec/api/Ids"
import { Array as Arr, Either, ParseResult, Schema } from "effect"
import { type DefinitionProblem, InvalidAppDefinition } from "./Errors.js"
import { canonicalJson, uuidFromContent } from "./internal/crypto/hash.js"
import type { NodeRegistry } from "./NodeRegistry.js"
import type { CompiledNode, NodeType, ParameterSpec } from "./NodeType.js"

/** A node as written in a definition. */
export const NodeDefinition = Schema.Struct({
  id: Schema.String.pipe(
    Schema.pattern(/^[A-Za-z0-9_.-]{1,64}$/, {
      message: () => "a node id is 1 to 64 letters, digits, '_', '.' or '-'"
    })
  ),
  type: Schema.NonEmptyString,
  label: Schema.optional(Schema.String),
  config: Schema.optional(Schema.Unknown)
})
export type NodeDefinition = typeof NodeDefinition.Type

/** An edge as written in a definition. */
export const EdgeDefinition = Schema.Struct({ source: Schema.String, target: Schema.String })

/** The app definition file. */
export const AppDefinition = Schema.Struct({
  name: Schema.NonEmptyTrimmedString,
  description: Schema.optional(Schema.String),
  public: Schema.optional(Schema.Boolean),
  /** Per-app execution timeout; the instance default applies when absent. */
  timeoutSeconds: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.positive())),
  /**
   * Most executions of the app running at once, across every process on the storage
   * (docs/scaling.md#limits); no cap when absent. The others stay queued.
   */
  concurrency: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.positive())),
  nodes: Schema.Array(NodeDefinition),
  edges: Schema.Array(EdgeDefinition)
})
export type AppDefinition = typeof AppDefinition.Type

/** A checked node of an app: what its type compiled it into, and its neighbours. */
export interface AppNode {
  readonly id: string
  readonly type: string
  readonly label: string
  /** The node, its decoded config closed over by its `run`. */
  readonly compiled: CompiledNode<never>
  /** Upstream node ids in edge order. */
  readonly upstream: ReadonlyArray<string>
}

/** A parameter contributed by an input node. */
export interface ParameterOf extends ParameterSpec {
  readonly nodeId: string
  /** The input node's `label` as written; absent when the definition gives none. */
  readonly label?: string
}

/** An output contributed by an output node; its id is the node id (docs/apps.md). */
export interface OutputOf {
  readonly id: string
  readonly label: string
  readonly type: Exclude<OutputType, "pending">
}

/** A definition that passed every check. */
export interface CompiledApp {
  readonly definition: AppDefinition
  /** Nodes in a topological order. */
  readonly nodes: ReadonlyArray<AppNode>
  readonly edges: ReadonlyArray<WorkflowEdge>
  readonly parameters: ReadonlyArray<ParameterOf>
  readonly outputs: ReadonlyArray<OutputOf>
}

const schemaProblems = (error: ParseResult.ParseError, prefix: string, node: string | null) =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map(
    (issue): DefinitionProblem => ({
      node,
      message: `${[prefix, ...issue.path.map(String)].filter((s) => s !== "").join(".") || "definition"}: ${
        issue._tag === "Unexpected"
          ? issue.message.replace(/^is unexpected, expected: /, "unknown key; expected one of ")
          : issue.message
      }`
    })
  )

/** Finds the cycles among `ids` (each reported once, as the path that closes it). */
const findCycles = (ids: ReadonlyArray<string>, downstream: ReadonlyMap<string, ReadonlyArray<string>>) => {
  const state = new Map<string, "visiting" | "done">()
  const cycles: Array<ReadonlyArray<string>> = []
  const visit = (id: string, path: Array<string>) => {
    state.set(id, "visiting")
    path.push(id)
    for (const next of downstream.get(id) ?? []) {
      const s = state.get(next)
      if (s === "visiting") cycles.push([...path.slice(path.indexOf(next)), next])
      else if (s === undefined) visit(next, path)
    }
    path.pop()
    state.set(id, "done")
  }
  for (const id of ids) if (!state.has(id)) visit(id, [])
  return cycles
}

/**
 * Decodes and checks an app definition against the registered node types: structure, duplicate
 * ids, unknown types, dangling edges, inputs with incoming edges, outputs with outgoing edges,
 * arity, node configs, duplicate parameter names, cycles, and at least one output.
 */
export const compile = (
  input: unknown,
  registry: NodeRegistry["Type"]
): Either.Either<CompiledApp, InvalidAppDefinition> => {
  const decoded = Schema.decodeUnknownEither(AppDefinition)(input, { onExcessProperty: "error", errors: "all" })
  if (Either.isLeft(decoded)) {
    return Either.left(new InvalidAppDefinition({ problems: asNonEmpty(schemaProblems(decoded.left, "", null)) }))
  }
  const definition = decoded.right
  const problems: Array<DefinitionProblem> = []
  const problem = (node: string | null, message: string) => problems.push({ node, message })

  const seen = new Set<string>()
  for (const node of definition.nodes) {
    if (seen.has(node.id)) problem(node.id, "duplicate node id")
    seen.add(node.id)
  }
  const specs = new Map<string, NodeType>()
  for (const node of definition.nodes) {
    const spec = registry.get(node.type)
    if (spec._tag === "None") {
      problem(node.id, `unknown node type '${node.type}' (registered types: ${registry.types.join(", ")})`)
    } else specs.set(node.id, spec.value)
  }

  const upstream = new Map<string, Array<string>>(definition.nodes.map((n) => [n.id, []]))
  const downstream = new Map<string, Array<string>>(definition.nodes.map((n) => [n.id, []]))
  const edgeKeys = new Set<string>()
  const edges: Array<WorkflowEdge> = []
  for (const edge of definition.edges) {
    const known = [edge.source, edge.target].filter((id) => !seen.has(id))
    if (known.length > 0) {
      for (const id of known) {
        problem(id, `edge ${edge.source} → ${edge.target} refers to node '${id}', which does not exist`)
      }
      continue
    }
    const key = `${edge.source}\u0000${edge.target}`
    if (edgeKeys.has(key)) {
      problem(edge.target, `duplicate edge ${edge.source} → ${edge.target}`)
      continue
    }
    edgeKeys.add(key)
    edges.push({ source: edge.source, target: edge.target })
    upstream.get(edge.target)!.push(edge.source)
    downstream.get(edge.source)!.push(edge.target)
  }

  const compiled = new Map<string, CompiledNode<never>>()
  const parameters: Array<ParameterOf> = []
  const outputs: Array<OutputOf> = []
  for (const node of definition.nodes) {
    const spec = specs.get(node.id)
    if (spec === undefined) continue
    const ups = upstream.get(node.id)!
    const downs = downstream.get(node.id)!
    const label = node.label ?? node.id
    if (spec.role === "input" && ups.length > 0) {
      problem(node.id, `input node has incoming edges (from ${ups.join(", ")})`)
    }
    if (spec.role === "output") {
      if (downs.length > 0) problem(node.id, `output node has outgoing edges (to ${downs.join(", ")})`)
      if (ups.length !== 1) problem(node.id, `output node needs exactly one incoming edge, has ${ups.length}`)
    }
    if (spec.role === "process" && (ups.length < spec.inputs.min || ups.length > spec.inputs.max)) {
      const range = spec.inputs.min === spec.inputs.max
        ? `${spec.inputs.min}`
        : `${spec.inputs.min} to ${spec.inputs.max}`
      problem(node.id, `${node.type} takes ${range} incoming edge(s), has ${ups.length}`)
    }
    const compiledNode = spec.compile(node.config ?? {}, { id: node.id, label, upstream: ups })
    if (Either.isLeft(compiledNode)) {
      for (const message of compiledNode.left) problem(node.id, message)
      continue
    }
    compiled.set(node.id, compiledNode.right)
    if (compiledNode.right.role === "input") {
      parameters.push({
        ...compiledNode.right.parameter,
        nodeId: node.id,
        ...(node.label === undefined ? {} : { label: node.label })
      })
    }
    if (compiledNode.right.role === "output") outputs.push({ id: node.id, label, type: compiledNode.right.outputType })
  }

  const names = new Map<string, string>()
  for (const p of parameters) {
    const other = names.get(p.name)
    if (other !== undefined) problem(p.nodeId, `parameter name '${p.name}' is already used by node '${other}'`)
    else names.set(p.name, p.nodeId)
  }
  if (definition.nodes.length > 0 && !definition.nodes.some((n) => specs.get(n.id)?.role === "output")) {
    problem(null, "the app has no output node")
  }
  if (definition.nodes.length === 0) problem(null, "the app has no nodes")

  // Kahn's algorithm gives the order; whatever it cannot order lies on or behind a cycle.
  const indegree = new Map([...upstream].map(([id, ups]) => [id, ups.length]))
  const ready = definition.nodes.filter((n) => indegree.get(n.id) === 0).map((n) => n.id)
  const order: Array<string> = []
  while (ready.length > 0) {
    const id = ready.shift()!
    order.push(id)
    for (const next of downstream.get(id)!) {
      const d = indegree.get(next)! - 1
      indegree.set(next, d)
      if (d === 0) ready.push(next)
    }
  }
  if (order.length < seen.size) {
    const unordered = [...seen].filter((id) => !order.includes(id))
    for (const cycle of findCycles(unordered, downstream)) problem(cycle[0]!, `cycle: ${cycle.join(" → ")}`)
  }

  if (problems.length > 0) return Either.left(new InvalidAppDefinition({ problems: asNonEmpty(problems) }))
  const byId = new Map(definition.nodes.map((n) => [n.id, n]))
  return Either.right({
    definition,
    nodes: order.map((id) => {
      const node = byId.get(id)!
      return {
        id,
        type: node.type,
        label: node.label ?? node.id,
        compiled: compiled.get(id)!,
        upstream: upstream.get(id)!
      }
    }),
    edges,
    parameters,
    outputs
  })
}

const asNonEmpty = (items: ReadonlyArray<DefinitionProblem>): Arr.NonEmptyReadonlyArray<DefinitionProblem> =>
  Arr.isNonEmptyReadonlyArray(items) ? items : [{ node: null, message: "the definition is not valid" }]

/**
 * The workflow id of a definition of an app: derived from the app id and the canonical content,
 * so re-importing the same content keeps it and any change makes a new one.
 */
export const workflowIdOf = (appId: AppId, definition: AppDefinition): WorkflowId =>
  WorkflowId.make(uuidFromContent("workflow", appId, canonicalJson(definition)))

/** The stable id of the parameter of input node `nodeId`: never the name (docs/api.md#parameter). */
export const parameterIdOf = (appId: AppId, nodeId: string): ParameterId =>
  ParameterId.make(uuidFromContent("parameter", appId, nodeId))
