/**
 * The DAG runner: runs the nodes of a compiled app, each as soon as its upstream nodes are done,
 * independent branches concurrently up to a bound. A failed node fails everything downstream of
 * it; branches that do not depend on it still run.
 */
import { Cause, Deferred, Effect, Option } from "effect"
import type { CompiledApp, CompiledNode } from "./AppDefinition.js"
import type { ProducedOutput } from "./ExecutionLifecycle.js"
import type { ResolvedInputs } from "./InputValidation.js"
import type { NodeContext, NodeValue } from "./NodeType.js"

/** What a run produced: the outputs that have values, and the error of every output that has none. */
export interface WorkflowResult {
  readonly produced: ReadonlyArray<ProducedOutput>
  /** Output id to error, for outputs that were not produced. */
  readonly outputErrors: Readonly<Record<string, string>>
  /** The error of the first failed node in topological order; none when everything succeeded. */
  readonly firstError: Option.Option<string>
}

const describeFailure = (node: CompiledNode, cause: Cause.Cause<{ readonly message: string }>) =>
  Effect.gen(function* () {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure)) return `node '${node.id}' (${node.type}) failed: ${failure.value.message}`
    // A defect is a bug in the node type: log it for the operator, show the consumer no internals.
    yield* Effect.logError(`node '${node.id}' (${node.type}) crashed`, cause)
    return `node '${node.id}' (${node.type}) failed unexpectedly`
  })

/**
 * Runs `app` on `inputs` with at most `concurrency` nodes running at once. Never fails: node
 * failures are reported in the result. Interrupting it interrupts every running node.
 */
export const runWorkflow = (
  app: CompiledApp,
  inputs: ResolvedInputs,
  execution: NodeContext<unknown>["execution"],
  concurrency: number
): Effect.Effect<WorkflowResult> =>
  Effect.gen(function* () {
    const results = new Map<string, Deferred.Deferred<NodeValue, string>>()
    for (const node of app.nodes) results.set(node.id, yield* Deferred.make<NodeValue, string>())
    const produced: Array<ProducedOutput> = []
    const errors = new Map<string, string>()
    const permits = yield* Effect.makeSemaphore(concurrency)
    const parameterName = new Map(app.parameters.map((p) => [p.nodeId, p.name]))

    const runNode = (node: CompiledNode): Effect.Effect<NodeValue, string> =>
      Effect.gen(function* () {
        const upstream = yield* Effect.forEach(node.upstream, (nodeId) =>
          Deferred.await(results.get(nodeId)!).pipe(Effect.map((value) => ({ nodeId, value })))
        )
        const ctx = { node: { id: node.id, label: node.label }, config: node.config, upstream, execution }
        const spec = node.spec
        const attempt: Effect.Effect<NodeValue, { readonly message: string }> =
          spec.role === "input"
            ? spec.run({ ...ctx, value: inputs[parameterName.get(node.id) ?? ""] ?? "" })
            : spec.role === "process"
              ? spec.run(ctx)
              : spec.run({ ...ctx, input: upstream[0]!.value }).pipe(
                  Effect.map((value): NodeValue => {
                    produced.push({ id: node.id, type: spec.outputType, value })
                    return { _tag: "Text", text: value }
                  })
                )
        return yield* permits.withPermits(1)(attempt).pipe(
          Effect.catchAllCause((cause): Effect.Effect<never, string> =>
            Cause.isInterruptedOnly(cause)
              ? Effect.interrupt
              : Effect.flatMap(describeFailure(node, cause), (message) => {
                  errors.set(node.id, message)
                  return Effect.fail(message)
                })
          )
        )
      })

    yield* Effect.forEach(
      app.nodes,
      (node) => Deferred.complete(results.get(node.id)!, runNode(node)),
      { concurrency: "unbounded", discard: true }
    )

    const outputErrors: Record<string, string> = {}
    for (const output of app.outputs) {
      if (produced.some((p) => p.id === output.id)) continue
      const exit = yield* Deferred.await(results.get(output.id)!).pipe(Effect.flip, Effect.option)
      outputErrors[output.id] = Option.getOrElse(exit, () => "the output was not produced")
    }
    const firstError = Option.fromNullable(app.nodes.map((n) => errors.get(n.id)).find((e) => e !== undefined))
    const order = new Map(app.outputs.map((o, i) => [o.id, i]))
    produced.sort((a, b) => order.get(a.id)! - order.get(b.id)!)
    return { produced, outputErrors, firstError }
  })
