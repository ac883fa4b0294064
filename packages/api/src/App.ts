/**
 * The app resources of docs/api.md#resources and §2.6, exactly as they appear on the wire.
 */
import { Schema } from "effect"
import { AppId, ParameterId } from "./Ids.js"

/** Kind of value a parameter takes (docs/api.md#parameter). */
export const ParameterType = Schema.Literal("text", "options", "url")
export type ParameterType = typeof ParameterType.Type

/**
 * An input definition of an app (docs/api.md#parameter). `accept`, `options` and `default` appear only where they
 * apply; `label`, `description`, `example` and `multiline` (extensions) only where the app defines them.
 */
export const Parameter = Schema.Struct({
  id: ParameterId,
  name: Schema.String,
  type: ParameterType,
  required: Schema.Boolean,
  accept: Schema.optional(Schema.Array(Schema.String)),
  options: Schema.optional(Schema.Array(Schema.String)),
  default: Schema.optional(Schema.String),
  /** An extension: the input node's `label`, a human name for a form field; absent when the node has none. */
  label: Schema.optional(Schema.String.annotations({ description: "The input node's human-readable label." })),
  /** An extension: the input node's `config.description`, help text; absent when the node has none. */
  description: Schema.optional(
    Schema.String.annotations({ description: "Help text for the parameter, from its input node." })
  ),
  /** An extension: the input node's `config.example`, a value to show in an empty field; never a default. */
  example: Schema.optional(
    Schema.String.annotations({
      description:
        "An example value, from its input node: a form shows it greyed in an empty field. It is never sent or taken as the default."
    })
  ),
  /** An extension: `true` when a `text` parameter's input node asks for several lines (`config.multiline`). */
  multiline: Schema.optional(
    Schema.Boolean.annotations({
      description:
        "Present (true) on a text parameter whose value may hold several lines: a form shows a multi-line box for it."
    })
  )
})
export type Parameter = typeof Parameter.Type

/** An item of the app list (docs/api.md#app-summary). */
export const AppSummary = Schema.Struct({
  appId: AppId,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  isPublic: Schema.Boolean
})
export type AppSummary = typeof AppSummary.Type

/** One app with its input definitions (docs/api.md#app-detail). */
export const AppDetail = Schema.Struct({
  appId: AppId,
  name: Schema.String,
  description: Schema.String,
  parameters: Schema.Array(Parameter)
})
export type AppDetail = typeof AppDetail.Type

/** A processing node of the workflow graph; node `config` stays internal (docs/apps.md). */
export const WorkflowNode = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  label: Schema.String
})
export type WorkflowNode = typeof WorkflowNode.Type

/** A directed edge between two node ids. */
export const WorkflowEdge = Schema.Struct({
  source: Schema.String,
  target: Schema.String
})
export type WorkflowEdge = typeof WorkflowEdge.Type

/** The workflow structure of an app (docs/api.md#workflow-graph). */
export const WorkflowGraph = Schema.Struct({
  appId: AppId,
  name: Schema.String,
  nodes: Schema.Array(WorkflowNode),
  edges: Schema.Array(WorkflowEdge)
})
export type WorkflowGraph = typeof WorkflowGraph.Type
