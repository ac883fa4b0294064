/**
 * The node registry: which node types an appexec instance knows.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { NodeContext, NodeRequirements, NodeType, NodeValue } from "./NodeType.js"

/** The node types known to this instance, with their services already provided. */
export class NodeRegistry extends Context.Tag("@appexec/core/NodeRegistry")<
  NodeRegistry,
  {
    /** The node type with this name, if registered. */
    readonly get: (type: string) => Option.Option<NodeType<any, any, never>>
    /** Registered type names, in registration order. */
    readonly types: ReadonlyArray<string>
  }
>() {}

const provide = <R>(node: NodeType<any, any, R>, context: Context.Context<R>): NodeType<any, any, never> => {
  switch (node.role) {
    case "input":
      return { ...node, run: (ctx: NodeContext<any> & { readonly value: string }) => Effect.provide(node.run(ctx), context) }
    case "process":
      return { ...node, run: (ctx: NodeContext<any>) => Effect.provide(node.run(ctx), context) }
    case "output":
      return { ...node, run: (ctx: NodeContext<any> & { readonly input: NodeValue }) => Effect.provide(node.run(ctx), context) }
  }
}

/**
 * A registry of `nodes`. The services the nodes need are taken from the layer's context once, so
 * the engine runs every node without knowing what it needs. Two nodes with one type name are a defect.
 */
export const layer = <const Nodes extends ReadonlyArray<NodeType<any, any, any>>>(
  nodes: Nodes
): Layer.Layer<NodeRegistry, never, NodeRequirements<Nodes[number]>> =>
  Layer.effect(
    NodeRegistry,
    Effect.gen(function* () {
      const context = yield* Effect.context<NodeRequirements<Nodes[number]>>()
      const byType = new Map<string, NodeType<any, any, never>>()
      for (const node of nodes) {
        if (byType.has(node.type)) return yield* Effect.dieMessage(`Node type '${node.type}' is registered twice`)
        byType.set(node.type, provide(node, context))
      }
      return { get: (type) => Option.fromNullable(byType.get(type)), types: [...byType.keys()] }
    })
  )
