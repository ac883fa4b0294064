/**
 * The DAG runner: runs the nodes of a compiled app, each as soon as its upstream nodes are done,
 * independent branches concurrently up to a bound. A failed node fails everything downstream of
 * it; branches that do not depend on it still run. What leaves a run, the outputs' values and
 * the failures' messages, is masked by the run's `redact` (the `Redactor`) as it is made, for
 * every node type alike.
 */
import { Cause, Deferred, Effect, Exit, Option } from "effect"
import type { AppNode, CompiledApp } from "../../AppDefinition.js"
import type { FailedOutput, ProducedOutput } from "../../ExecutionLifecycle.js"
import type { ResolvedInputs } from "../../InputValidation.js"
import { NodeFailure, NodeValue, type RunContext, type UpstreamValue } from "../../NodeType.js"

/** What a run tells its worker as it goes (docs/api.md#live-executions). */
export interface RunHooks {
  /** The `progress`, `log` and `preview` of the node context of `nodeId`. */
  readonly reportsOf: (nodeId: string) => Pick<RunContext, "progress" | "log" | "preview">
  /**
   * An output settled while other outputs are still pending: produced (with its value) or failed
   * (with its error). Not called for the last output to settle: the run's end records that one.
   */
  readonly settled: (output: SettledOutput) => Effect.Effect<void>
  /**
   * An output shows a partial result of the node that feeds it, while the run goes on
   * (`partial` of a node context): saved as produced, until the output's final value replaces it.
   */
  readonly partial: (output: ProducedOutput) => Effect.Effect<void>
  /** Masks secrets in a text that leaves the run: an output's value, a node's failure message. */
  readonly redact: (text: string) => string
}

/** An output known before the run ends. */
export type SettledOutput =
  | { readonly _tag: "Produced"; readonly output: ProducedOutput }
  | { readonly _tag: "Failed" } & FailedOutput

/** The `partial` of input and output nodes: nothing. */
const noPartial = (): Effect.Effect<void> => Effect.void

/** Hooks that report nothing: for runs nobody follows. */
export const silentHooks: RunHooks = {
  reportsOf: () => ({ progress: () => Effect.void, log: () => Effect.void, preview: () => Effect.void }),
  settled: () => Effect.void,
  partial: () => Effect.void,
  redact: (text) => text
}

/** What a run produced: the outputs that have values, and the error of every output that has none. */
export interface WorkflowResult {
  readonly produced: ReadonlyArray<ProducedOutput>
  /** Output id to error, for outputs that were not produced. */
  readonly outputErrors: Readonly<Record<string, string>>
  /** The error of the first failed node in topological order; none when everything succeeded. */
  readonly firstError: Option.Option<string>
}

/**
 * How an error names a node: `node "Resize" ('size', image.resize)` by its label, id and type, or
 * `node 'size' (image.resize)` when its label is its id (a definition that gives none).
 */
export const nodeName = (node: Pick<AppNode, "id" | "label" | "type">): string =>
  node.label === node.id
    ? `node '${node.id}' (${node.type})`
    : `node ${JSON.stringify(node.label)} ('${node.id}', ${node.type})`

const describeFailure = (
  node: AppNode,
  cause: Cause.Cause<NodeFailure>,
  redact: RunHooks["redact"]
): Effect.Effect<NodeFailure> =>
  Effect.gen(function*() {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure)) {
      return new NodeFailure({ message: `${nodeName(node)} failed: ${redact(failure.value.message)}` })
    }
    // A defect is a bug in the node type: log it for the operator, show the consumer no internals.
    yield* Effect.logError(`${nodeName(node)} crashed`, cause)
    return new NodeFailure({ message: `${nodeName(node)} failed unexpectedly` })
  })

/**
 * Whether the nodes (in topological order) form one chain, each depending on the one before, so
 * that no two of them could ever run at the same time.
 */
const isChain = (app: CompiledApp): boolean =>
  app.nodes.every((node, i) => i === 0 || node.upstream.includes(app.nodes[i - 1]!.id))

/** What every run of one compiled app shares, worked out at its first run. */
interface Shape {
  readonly chain: boolean
  /** Input node id to its parameter's name. */
  readonly parameterName: ReadonlyMap<string, string>
  /** Output id to its position among the outputs. */
  readonly order: ReadonlyMap<string, number>
  /** Each node's `node` of its context, made once rather than per run. */
  readonly identity: ReadonlyMap<string, RunContext["node"]>
  /** Each node's downstream output nodes (those a partial result of it reaches). */
  readonly outputsOf: ReadonlyMap<string, ReadonlyArray<AppNode>>
}
const shapes = new WeakMap<CompiledApp, Shape>()
const shapeOf = (app: CompiledApp): Shape => {
  let shape = shapes.get(app)
  if (shape === undefined) {
    shape = {
      chain: isChain(app),
      parameterName: new Map(app.parameters.map((p) => [p.nodeId, p.name])),
      order: new Map(app.outputs.map((o, i) => [o.id, i])),
      identity: new Map(app.nodes.map((node) => [node.id, { id: node.id, label: node.label }])),
      outputsOf: new Map(
        app.nodes.map((node) => [
          node.id,
          app.nodes.filter((n) => n.compiled.role === "output" && n.upstream[0] === node.id)
        ])
      )
    }
    shapes.set(app, shape)
  }
  return shape
}

/**
 * Runs `app` on `inputs` with at most `concurrency` nodes running at once. Never fails: node
 * failures are reported in the result. Interrupting it interrupts every running node.
 */
export const runWorkflow = (
  app: CompiledApp,
  inputs: ResolvedInputs,
  execution: RunContext["execution"],
  concurrency: number,
  hooks: RunHooks = silentHooks
): Effect.Effect<WorkflowResult> => Effect.suspend(() => begin(app, inputs, execution, concurrency, hooks))

/** The run of `runWorkflow`, made as its effect starts. */
const begin = (
  app: CompiledApp,
  inputs: ResolvedInputs,
  execution: RunContext["execution"],
  concurrency: number,
  hooks: RunHooks
): Effect.Effect<WorkflowResult> => {
  const shape = shapeOf(app)
  const produced: Array<ProducedOutput> = []
  // Made when first needed (a failure, a partial result): a run that needs neither makes none.
  let errors: Map<string, string> | undefined
  const failed = (nodeId: string, message: string) => (errors ??= new Map()).set(nodeId, message)

  /** The outputs that show a partial result. */
  let partials: Set<string> | undefined
  /**
   * The `partial` of process node `node`: each output node it feeds runs on `value`, and its
   * output shows the result; an output node that refuses the value is left as it was. An output
   * shows the first partial result it gets: the view's version, by which streams and event ids go
   * (`ExecutionRecord.versionOf`), grows once per output settled, so a second would not be seen.
   */
  const partialOf = (node: AppNode) => (value: NodeValue): Effect.Effect<void> =>
    Effect.forEach(shape.outputsOf.get(node.id) ?? [], (output) => {
      const compiled = output.compiled
      if (compiled.role !== "output" || partials?.has(output.id) === true) return Effect.void
      const ran = compiled.run({
        node: shape.identity.get(output.id)!,
        upstream: [{ nodeId: node.id, value }],
        execution,
        ...hooks.reportsOf(output.id),
        partial: noPartial,
        input: value
      })
      return Effect.matchCauseEffect(ran, {
        onSuccess: (shown) => {
          partials ??= new Set()
          partials.add(output.id)
          return hooks.partial({ id: output.id, type: compiled.outputType, value: hooks.redact(shown) })
        },
        onFailure: (cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.interrupt
            : Effect.logDebug(`${nodeName(output)}: a partial result of node '${node.id}' not shown`, cause)
      })
    }, { discard: true })

  const attemptOf = (
    node: AppNode,
    upstream: ReadonlyArray<UpstreamValue>
  ): Effect.Effect<NodeValue, NodeFailure> => {
    // One context object per node run, made whole at once (no copies of it with one field more).
    const identity = shape.identity.get(node.id)!
    const { log, preview, progress } = hooks.reportsOf(node.id)
    const compiled = node.compiled
    switch (compiled.role) {
      case "input": {
        const value = inputs[shape.parameterName.get(node.id) ?? ""] ?? ""
        return compiled.run({ node: identity, upstream, execution, progress, log, preview, partial: noPartial, value })
      }
      case "process":
        return compiled.run({ node: identity, upstream, execution, progress, log, preview, partial: partialOf(node) })
      case "output": {
        const input = upstream[0]!.value
        const ran = compiled.run({
          node: identity,
          upstream,
          execution,
          progress,
          log,
          preview,
          partial: noPartial,
          input
        })
        return Effect.map(ran, (produce) => {
          const value = hooks.redact(produce)
          produced.push({ id: node.id, type: compiled.outputType, value })
          return NodeValue.text(value)
        })
      }
    }
  }

  /** The result, once every output is produced or known to have failed (`failureOf`). */
  const result = (failureOf: (outputId: string) => Option.Option<NodeFailure>): WorkflowResult => {
    const outputErrors: Record<string, string> = {}
    for (const output of app.outputs) {
      if (produced.some((p) => p.id === output.id)) continue
      outputErrors[output.id] = Option.match(failureOf(output.id), {
        onNone: () => "the output was not produced",
        onSome: (f) => f.message
      })
    }
    const firstError = errors === undefined
      ? Option.none()
      : Option.fromNullable(app.nodes.map((n) => errors!.get(n.id)).find((e) => e !== undefined))
    if (produced.length > 1) produced.sort((a, b) => shape.order.get(a.id)! - shape.order.get(b.id)!)
    return { produced, outputErrors, firstError }
  }

  if (shape.chain) {
    // Nothing can run beside anything else: the nodes run one after the other in this fiber,
    // each chained to the one before, with no deferred, permit or fiber per node, and no
    // generator. A failure fails every node after it.
    const values = new Map<string, NodeValue>()
    const failedFrom = (i: number, failure: NodeFailure) => {
      const failures = new Map<string, NodeFailure>()
      for (let j = i; j < app.nodes.length; j++) failures.set(app.nodes[j]!.id, failure)
      return result((id) => Option.fromNullable(failures.get(id)))
    }
    const from = (i: number): Effect.Effect<WorkflowResult> => {
      if (i === app.nodes.length) return Effect.succeed(result(() => Option.none()))
      const node = app.nodes[i]!
      const upstream = node.upstream.map((nodeId) => ({ nodeId, value: values.get(nodeId)! }))
      return Effect.matchCauseEffect(attemptOf(node, upstream), {
        onSuccess: (value) => {
          values.set(node.id, value)
          return from(i + 1)
        },
        onFailure: (cause) =>
          Cause.isInterruptedOnly(cause) ?
            Effect.interrupt :
            Effect.map(describeFailure(node, cause, hooks.redact), (failure) => {
              failed(node.id, failure.message)
              return failedFrom(i, failure)
            })
      })
    }
    return from(0)
  }

  return Effect.gen(function*() {
    const results = new Map<string, Deferred.Deferred<NodeValue, NodeFailure>>()
    for (const node of app.nodes) results.set(node.id, yield* Deferred.make<NodeValue, NodeFailure>())
    const permits = yield* Effect.makeSemaphore(concurrency)

    const runNode = (node: AppNode): Effect.Effect<NodeValue, NodeFailure> =>
      Effect.gen(function*() {
        const upstream = yield* Effect.forEach(
          node.upstream,
          (nodeId) => Deferred.await(results.get(nodeId)!).pipe(Effect.map((value) => ({ nodeId, value })))
        )
        return yield* permits.withPermits(1)(attemptOf(node, upstream)).pipe(
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.interrupt
              : Effect.flatMap(describeFailure(node, cause, hooks.redact), (failure) => {
                failed(node.id, failure.message)
                return Effect.fail(failure)
              })
          )
        )
      })

    // Outputs settled so far: each but the last is told to the hooks as it settles.
    let settled = 0
    const settle = (node: AppNode, exit: Exit.Exit<NodeValue, NodeFailure>): Effect.Effect<void> => {
      if (node.compiled.role !== "output" || Exit.isInterrupted(exit)) return Effect.void
      settled += 1
      if (settled === app.outputs.length) return Effect.void
      if (Exit.isSuccess(exit)) {
        const output = produced.find((p) => p.id === node.id)
        return output === undefined ? Effect.void : hooks.settled({ _tag: "Produced", output })
      }
      const failure = Cause.failureOption(exit.cause)
      return hooks.settled({
        _tag: "Failed",
        id: node.id,
        type: node.compiled.outputType,
        error: Option.match(failure, { onNone: () => "the output was not produced", onSome: (f) => f.message })
      })
    }

    yield* Effect.forEach(
      app.nodes,
      (node) =>
        Deferred.complete(
          results.get(node.id)!,
          node.compiled.role === "output"
            ? Effect.flatMap(Effect.exit(runNode(node)), (exit) => Effect.zipRight(settle(node, exit), exit))
            : runNode(node)
        ),
      { concurrency: "unbounded", discard: true }
    )
    const failures = new Map<string, Option.Option<NodeFailure>>()
    for (const output of app.outputs) {
      failures.set(output.id, yield* Deferred.await(results.get(output.id)!).pipe(Effect.flip, Effect.option))
    }
    return result((id) => failures.get(id) ?? Option.none())
  })
}
