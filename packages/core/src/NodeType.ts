/**
 * Node types: the public `defineNode` API with which built-in and operator-defined nodes are
 * written. A node type has a name, an effect/Schema config validated at import time, and a
 * `run` that receives the values of its upstream nodes and returns an Effect.
 */
import { type Effect, Schema } from "effect"
import type { ParameterType } from "@appexec/api/App"
import type { OutputType } from "@appexec/api/Execution"
import type { AppId, ExecutionId, WorkspaceId } from "@appexec/api/Ids"

/** A value flowing along an edge. */
export type NodeValue =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Json"; readonly json: unknown }
  | {
      readonly _tag: "Url"
      readonly url: string
      /** Media kinds the URL's parameter accepts, when it came from an `input.url` parameter. */
      readonly accept?: ReadonlyArray<"image" | "video" | "audio">
    }
  | {
      readonly _tag: "Media"
      readonly kind: "image" | "video" | "audio"
      readonly contentType: string
      readonly bytes: Uint8Array
    }

/** Constructors of node values. */
export const NodeValue = {
  text: (text: string): NodeValue => ({ _tag: "Text", text }),
  json: (json: unknown): NodeValue => ({ _tag: "Json", json }),
  url: (url: string, accept?: ReadonlyArray<"image" | "video" | "audio">): NodeValue =>
    accept === undefined ? { _tag: "Url", url } : { _tag: "Url", url, accept },
  media: (kind: "image" | "video" | "audio", contentType: string, bytes: Uint8Array): NodeValue => ({
    _tag: "Media",
    kind,
    contentType,
    bytes
  }),
  /** A value as text, for templates and text outputs; media has no text form. */
  asText: (value: NodeValue): string | undefined => {
    switch (value._tag) {
      case "Text":
        return value.text
      case "Url":
        return value.url
      case "Json":
        return typeof value.json === "string" ? value.json : JSON.stringify(value.json)
      case "Media":
        return undefined
    }
  }
}

/** Why a node failed; the message is shown to the consumer as the output's `error`. */
export class NodeFailure extends Schema.TaggedError<NodeFailure>()("NodeFailure", {
  message: Schema.String
}) {}

/** The value of one upstream node, in the order of the definition's edges. */
export interface UpstreamValue {
  readonly nodeId: string
  readonly value: NodeValue
}

/** What a node's `run` receives. */
export interface NodeContext<C> {
  readonly node: { readonly id: string; readonly label: string }
  readonly config: C
  readonly upstream: ReadonlyArray<UpstreamValue>
  readonly execution: {
    readonly executionId: ExecutionId
    readonly appId: AppId
    readonly workspaceId: WorkspaceId
  }
}

/** The parameter an input node contributes to its app (ids are assigned by the app). */
export interface ParameterSpec {
  readonly name: string
  readonly type: ParameterType
  readonly required: boolean
  readonly accept?: ReadonlyArray<string>
  readonly options?: ReadonlyArray<string>
  readonly default?: string
  readonly description?: string
}

/** Facts about a node's place in the graph, for import-time checks. */
export interface NodePlacement {
  readonly id: string
  readonly label: string
  readonly upstream: ReadonlyArray<string>
}

interface CommonSpec<C, CI> {
  /** Unique type name, such as `text.template`. */
  readonly type: string
  /** One sentence for operators' docs. */
  readonly description: string
  /** Config schema; decoding failures are import errors naming the node. */
  readonly config: Schema.Schema<C, CI>
  /** Further import-time checks of the config against the graph; each string is one problem. */
  readonly check?: (config: C, placement: NodePlacement) => ReadonlyArray<string>
}

/** A node that reads one parameter of the app; it has no incoming edges. */
export interface InputNodeSpec<C, CI, R> extends CommonSpec<C, CI> {
  readonly role: "input"
  readonly parameter: (config: C, placement: NodePlacement) => ParameterSpec
  readonly run: (ctx: NodeContext<C> & { readonly value: string }) => Effect.Effect<NodeValue, NodeFailure, R>
}

/** A node that transforms upstream values. `inputs` bounds its number of incoming edges. */
export interface ProcessNodeSpec<C, CI, R> extends CommonSpec<C, CI> {
  readonly role: "process"
  readonly inputs: { readonly min: number; readonly max: number }
  readonly run: (ctx: NodeContext<C>) => Effect.Effect<NodeValue, NodeFailure, R>
}

/** A node that becomes an output of the app; exactly one incoming edge, no outgoing edges. */
export interface OutputNodeSpec<C, CI, R> extends CommonSpec<C, CI> {
  readonly role: "output"
  readonly outputType: Exclude<OutputType, "pending">
  /** Turns the upstream value into the output's `value` string (text, JSON text, or a media URL). */
  readonly run: (ctx: NodeContext<C> & { readonly input: NodeValue }) => Effect.Effect<string, NodeFailure, R>
}

/** A node type, as registered. */
export type NodeType<C = any, CI = any, R = any> =
  | InputNodeSpec<C, CI, R>
  | ProcessNodeSpec<C, CI, R>
  | OutputNodeSpec<C, CI, R>

/** The services a node type needs to run. */
export type NodeRequirements<N> = N extends NodeType<any, any, infer R> ? R : never

/**
 * Defines a node type. The same API writes the built-ins and an operator's own nodes:
 *
 * ```ts
 * const upper = defineNode({
 *   type: "text.upper",
 *   description: "Upper-cases its input text",
 *   role: "process",
 *   inputs: { min: 1, max: 1 },
 *   config: Schema.Struct({}),
 *   run: ({ upstream }) => Effect.succeed(NodeValue.text(String(NodeValue.asText(upstream[0]!.value)).toUpperCase()))
 * })
 * ```
 */
export function defineNode<C, CI, R = never>(spec: InputNodeSpec<C, CI, R>): InputNodeSpec<C, CI, R>
export function defineNode<C, CI, R = never>(spec: ProcessNodeSpec<C, CI, R>): ProcessNodeSpec<C, CI, R>
export function defineNode<C, CI, R = never>(spec: OutputNodeSpec<C, CI, R>): OutputNodeSpec<C, CI, R>
export function defineNode(spec: NodeType): NodeType {
  return spec
}
