/**
 * The node registry: which node types an appexec instance knows.
 */
import { Context, Effect, Layer, Option } from "effect"
import { InvalidConfiguration } from "./Errors.js"
import * as NodeType from "./NodeType.js"

/** The node types known to this instance, with their services already provided. */
export class NodeRegistry extends Context.Tag("@appexec/core/NodeRegistry")<
  NodeRegistry,
  {
    /** The node type with this name, if registered. */
    readonly get: (type: string) => Option.Option<NodeType.NodeType>
    /** Registered type names, in registration order. */
    readonly types: ReadonlyArray<string>
  }
>() {}

/**
 * A registry of `nodes`. The services the nodes need are taken from the layer's context once, so
 * the engine runs every node without knowing what it needs. Two nodes with one type name fail
 * the layer with `InvalidConfiguration`.
 */
export const layer = <const Nodes extends ReadonlyArray<NodeType.Any>>(
  nodes: Nodes
): Layer.Layer<NodeRegistry, InvalidConfiguration, NodeType.NodeRequirements<Nodes[number]>> =>
  Layer.effect(
    NodeRegistry,
    Effect.gen(function*() {
      const context = yield* Effect.context<NodeType.NodeRequirements<Nodes[number]>>()
      const byType = new Map<string, NodeType.NodeType>()
      for (const node of nodes) {
        if (byType.has(node.type)) {
          return yield* new InvalidConfiguration({
            setting: "nodes",
            reason: `node type '${node.type}' is registered twice`
          })
        }
        // Sound by construction: each node's requirements are part of the union `context` provides,
        // which TypeScript cannot see through the generic `Nodes`.
        const typed = node as NodeType.NodeType<NodeType.NodeRequirements<Nodes[number]>>
        byType.set(node.type, NodeType.provide(typed, context))
      }
      return { get: (type) => Option.fromNullable(byType.get(type)), types: [...byType.keys()] }
    })
  )
