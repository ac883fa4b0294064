/**
 * Routing by node type (docs/scaling.md#pools-and-limits): a worker runs the node types that are
 * installed in its process and match its `nodeTypes` patterns (every installed type when it has
 * none), and claims only the executions of workflow versions whose every node type it runs. A
 * queued execution that no live worker could run says so (`waitingFor`).
 */
import { Context } from "effect"
import type { AppDefinition } from "./AppDefinition.js"

/** Whether `type` matches `pattern`, where `*` stands for any run of characters (`video.*`, `*.resize`). */
export const matches = (pattern: string, type: string): boolean => {
  if (!pattern.includes("*")) return pattern === type
  const parts = pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
  return new RegExp(`^${parts.join(".*")}$`).test(type)
}

/** The node types a worker runs: those installed (`installed`) that match one of `patterns`, all when none. */
export const runnable = (
  installed: ReadonlyArray<string>,
  patterns: ReadonlyArray<string> | undefined
): ReadonlyArray<string> =>
  patterns === undefined ? installed : installed.filter((type) => patterns.some((pattern) => matches(pattern, type)))

/** The distinct node types of an app definition, sorted. */
export const nodeTypesOf = (definition: AppDefinition): ReadonlyArray<string> =>
  [...new Set(definition.nodes.map((node) => node.type))].sort()

/** The node types of `needed` that `runs` does not hold (none: it can run them all). */
export const missing = (needed: ReadonlyArray<string>, runs: ReadonlySet<string>): ReadonlyArray<string> =>
  needed.filter((type) => !runs.has(type))

/**
 * What a queued execution that needs `needed` waits for, given the node types of each live worker
 * (`workers`): undefined when one of them runs them all, else a sentence for the poll answer
 * (`waitingFor`), such as `a worker for video.kenburns` or `a worker for image.resize and video.kenburns`.
 */
export const waitingFor = (
  needed: ReadonlyArray<string>,
  workers: ReadonlyArray<ReadonlySet<string>>
): string | undefined => {
  if (workers.some((runs) => missing(needed, runs).length === 0)) return undefined
  // Name what the closest worker lacks (every type when there is no worker at all).
  let lacking = needed
  for (const runs of workers) {
    const lacks = missing(needed, runs)
    if (lacks.length < lacking.length) lacking = lacks
  }
  return `a worker for ${lacking.join(" and ")}`
}

/**
 * A resource that executions of a node type share across every process, such as a pool of GPU
 * servers: at most `limit` executions whose workflow uses `nodeType` run at once, the others
 * waiting in appexec's queue (docs/scaling.md#limits).
 */
export interface ResourceLimit {
  readonly resource: string
  readonly nodeType: string
  readonly limit: number
}

/** The resources the node packages of the instance declare (`provider.comfyui`: its servers' total capacity). */
export class NodeResources extends Context.Tag("@appexec/core/NodeResources")<
  NodeResources,
  ReadonlyArray<ResourceLimit>
>() {}
