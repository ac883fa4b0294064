/**
 * Node types: the public `defineNode` API with which built-in and operator-defined nodes are
 * written. A node type has a name, an effect/Schema config validated at import time, and a
 * `run` that receives the values of its upstream nodes and returns an Effect.
 *
 * `defineNode` turns a spec into a `NodeType`, whose config type is hidden behind `compile`: the
 * engine compiles each node of an app once, at import, into a `CompiledNode` whose `run` closes
 * over the decoded config. So the registry and the runner hold node types of any config without
 * knowing it (`NodeType.Any`), as `Rpc.Any` and `HttpApiEndpoint.Any` do for their kinds.
 */
import type { ParameterType } from "@appexec/api/App"
import type { OutputType } from "@appexec/api/Execution"
import type { AppId, ExecutionId, WorkspaceId } from "@appexec/api/Ids"
import type { LogLevel } from "@appexec/api/Live"
import { Array as Arr, type Context, Effect, Either, Exit, FiberRef, ParseResult, Schema } from "effect"

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

/**
 * Why a node failed; the message is shown to the consumer as the output's `error`, any secret in
 * it masked (`Redactor`).
 */
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
  /**
   * Reports how far the node is (docs/api.md#live-executions): `fraction` from 0 to 1 (clamped),
   * with an optional short message. A fraction lower than the node reported before is raised to
   * it: progress never goes back. Reports are coalesced (the newest per node is kept) and never fail.
   */
  readonly progress: (fraction: number, message?: string) => Effect.Effect<void>
  /**
   * Writes a line to the execution's log, which the execution's consumer reads
   * (docs/api.md#live-executions): not a request's headers or body. A secret value in it is
   * masked (`Redactor`), as in the node's outputs and failures. Never fails.
   */
  readonly log: (message: string, level?: LogLevel) => Effect.Effect<void>
  /**
   * Shows a live preview image of the node's work (a sampler's frame) to the execution's consumer
   * (the `preview` event, docs/api.md#live-executions): a JPEG or PNG of at most `PREVIEW_BYTES`
   * (larger ones are not kept). At most one is stored per `PREVIEW_INTERVAL_MS` of the execution,
   * the newest replacing the pending one; only the newest is kept. Optional to call; never fails.
   */
  readonly preview: (bytes: Uint8Array, mediaType: "image/jpeg" | "image/png") => Effect.Effect<void>
  /**
   * Shows a partial result of a process node while it still runs (docs/nodes.md#partial-results):
   * the output nodes fed directly by the node run on `value`, and their outputs show it as
   * `completed` in the running execution; the node's final value replaces it. An output shows the
   * first partial it gets (later ones are not shown), and none its output node refuses. Completes
   * once the outputs are saved. Does nothing in input and output nodes. Never fails.
   */
  readonly partial: (value: NodeValue) => Effect.Effect<void>
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
  /** A value to show in an empty field, never sent: the `example` of the parameter (docs/api.md#parameter). */
  readonly example?: string
  /** Whether a text parameter's value may hold several lines (`multiline` of the parameter). */
  readonly multiline?: boolean
}

/** Facts about a node's place in the graph, for import-time checks. */
export interface NodePlacement {
  readonly id: string
  readonly label: string
  readonly upstream: ReadonlyArray<string>
}

/**
 * The inner steps of a node that runs a pipeline of its own (a ComfyUI workflow), as the app's
 * workflow graph shows them in its place (docs/api.md#workflow-graph): their ids are the node's
 * id, `/` and theirs.
 */
export interface InnerGraph {
  readonly nodes: ReadonlyArray<{ readonly id: string; readonly type: string; readonly label: string }>
  readonly edges: ReadonlyArray<{ readonly source: string; readonly target: string }>
  /** The inner steps that the upstream node `upstream` feeds (none: the steps without an inner edge in). */
  readonly entries: (upstream: string) => ReadonlyArray<string>
  /** The inner steps whose results leave the node. */
  readonly exits: ReadonlyArray<string>
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
  /** The node's inner steps, shown in its place in the workflow graph (absent: the node itself). */
  readonly graph?: (config: C, placement: NodePlacement) => InnerGraph | undefined
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

/** What a node type is written as: one of the three roles. */
export type NodeSpec<C, CI, R> = InputNodeSpec<C, CI, R> | ProcessNodeSpec<C, CI, R> | OutputNodeSpec<C, CI, R>

/** What every node's `run` receives besides its config. */
export type RunContext = Omit<NodeContext<never>, "config">

/** One node of an app after import: its decoded config is closed over by `run`; its inner steps, if it shows them. */
export type CompiledNode<R> =
  & { readonly graph?: InnerGraph | undefined }
  & (
    | {
      readonly role: "input"
      readonly parameter: ParameterSpec
      readonly run: (ctx: RunContext & { readonly value: string }) => Effect.Effect<NodeValue, NodeFailure, R>
    }
    | {
      readonly role: "process"
      readonly run: (ctx: RunContext) => Effect.Effect<NodeValue, NodeFailure, R>
    }
    | {
      readonly role: "output"
      readonly outputType: Exclude<OutputType, "pending">
      readonly run: (ctx: RunContext & { readonly input: NodeValue }) => Effect.Effect<string, NodeFailure, R>
    }
  )

/** Unique identifier of node types. */
export const TypeId: unique symbol = Symbol.for("@appexec/core/NodeType")
export type TypeId = typeof TypeId

/**
 * A registered node type whose runs need `R`. Its config type is known only to `compile`.
 * Covariant in `R`: a node type that needs nothing is also a `NodeType<unknown>` (`NodeType.Any`).
 */
export interface NodeType<out R = never> {
  readonly [TypeId]: TypeId
  /** Unique type name, such as `text.template`. */
  readonly type: string
  /** One sentence for operators' docs. */
  readonly description: string
  readonly role: "input" | "process" | "output"
  /** How many incoming edges a node of this type takes. */
  readonly inputs: { readonly min: number; readonly max: number }
  /** The kind of value an output node produces; none for other roles. */
  readonly outputType: Exclude<OutputType, "pending"> | undefined
  /** Decodes and checks the config of a node at `placement`: the compiled node, or every problem. */
  readonly compile: (
    config: unknown,
    placement: NodePlacement
  ) => Either.Either<CompiledNode<R>, Arr.NonEmptyReadonlyArray<string>>
}

/** Any node type, whatever its runs need. */
export type Any = NodeType<unknown>

/** The services a node type needs to run. */
export type NodeRequirements<N> = N extends NodeType<infer R> ? R : never

/** The schema issues of a config, each as `config.<path>: <message>`. */
const configProblems = (error: ParseResult.ParseError): Arr.NonEmptyReadonlyArray<string> => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error).map(
    (issue) =>
      `${["config", ...issue.path.map(String)].join(".")}: ${
        issue._tag === "Unexpected"
          ? issue.message.replace(/^is unexpected, expected: /, "unknown key; expected one of ")
          : issue.message
      }`
  )
  return Arr.isNonEmptyReadonlyArray(issues) ? issues : ["config: not valid"]
}

/**
 * The context of a node's own run: `ctx` with `config`, written out field by field. On the run
 * path, once per node run: a spread of `ctx` followed by a field it lacks (`{ ...ctx, config }`)
 * leaves V8's fast copy and costs about a microsecond; a literal costs a few nanoseconds.
 */
const withConfig = <C>(ctx: RunContext, config: C): NodeContext<C> => ({
  node: ctx.node,
  config,
  upstream: ctx.upstream,
  execution: ctx.execution,
  progress: ctx.progress,
  log: ctx.log,
  preview: ctx.preview,
  partial: ctx.partial
})

/** `withConfig` for an input node: its value added to the fresh context (a step of its shape, not a copy). */
const withValue = <C>(ctx: RunContext & { readonly value: string }, config: C) => {
  const context: NodeContext<C> & { value?: string } = withConfig(ctx, config)
  context.value = ctx.value
  return context as NodeContext<C> & { readonly value: string }
}

/** `withConfig` for an output node: its input added to the fresh context. */
const withInput = <C>(ctx: RunContext & { readonly input: NodeValue }, config: C) => {
  const context: NodeContext<C> & { input?: NodeValue } = withConfig(ctx, config)
  context.input = ctx.input
  return context as NodeContext<C> & { readonly input: NodeValue }
}

/** The compiled form of a spec's node whose config decoded to `config`. */
const compiledOf = <C, CI, R>(spec: NodeSpec<C, CI, R>, config: C, placement: NodePlacement): CompiledNode<R> => {
  const graph = spec.graph?.(config, placement)
  const shown = graph === undefined ? {} : { graph }
  switch (spec.role) {
    case "input":
      return {
        ...shown,
        role: "input",
        parameter: spec.parameter(config, placement),
        run: (ctx) => spec.run(withValue(ctx, config))
      }
    case "process":
      return { ...shown, role: "process", run: (ctx) => spec.run(withConfig(ctx, config)) }
    case "output":
      return { ...shown, role: "output", outputType: spec.outputType, run: (ctx) => spec.run(withInput(ctx, config)) }
  }
}

/** Wraps every run of `compiled` with `f`. */
const mapRuns = <R, R2>(
  compiled: CompiledNode<R>,
  f: <A>(run: Effect.Effect<A, NodeFailure, R>) => Effect.Effect<A, NodeFailure, R2>
): CompiledNode<R2> => {
  switch (compiled.role) {
    case "input":
      return { ...compiled, run: (ctx: RunContext & { readonly value: string }) => f(compiled.run(ctx)) }
    case "process":
      return { ...compiled, run: (ctx: RunContext) => f(compiled.run(ctx)) }
    case "output":
      return { ...compiled, run: (ctx: RunContext & { readonly input: NodeValue }) => f(compiled.run(ctx)) }
  }
}

const make = <R>(fields: Omit<NodeType<R>, typeof TypeId>): NodeType<R> => ({ [TypeId]: TypeId, ...fields })

/**
 * Runs `run` with the services of `context`. A fiber whose context already holds each of them (the
 * worker's runs, forked inside the instance that built the registry) runs it as it is: providing
 * a context costs a merge of two contexts and a scoped change of the fiber's context, per node.
 * The answer is kept for the last context met, which is the same object for every run of a worker.
 * A run that is already done (its node answered `Effect.succeed` or `Effect.fail`, which are
 * `Exit`s) needs no services, and is answered as it is.
 */
const provider = <R>(context: Context.Context<R>) => {
  const services = [...context.unsafeMap]
  let covered: Context.Context<never> | undefined
  const covers = (parent: Context.Context<never>) => {
    if (parent === covered) return true
    for (const [key, service] of services) {
      if (parent.unsafeMap.get(key) !== service) return false
    }
    covered = parent
    return true
  }
  return <A, E>(run: Effect.Effect<A, E, R>): Effect.Effect<A, E> =>
    Exit.isExit(run) ?
      run as Effect.Effect<A, E> :
      Effect.withFiberRuntime((fiber) =>
        covers(fiber.getFiberRef(FiberRef.currentContext))
          ? run as Effect.Effect<A, E>
          : Effect.provide(run, context)
      )
}

/** `node` with the services its runs need taken from `context`: it needs nothing more. */
export const provide = <R>(node: NodeType<R>, context: Context.Context<R>): NodeType<never> => {
  const withServices = provider(context)
  return make<never>({
    type: node.type,
    description: node.description,
    role: node.role,
    inputs: node.inputs,
    outputType: node.outputType,
    compile: (config, placement) =>
      Either.map(node.compile(config, placement), (compiled) => mapRuns(compiled, withServices))
  })
}

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
export const defineNode = <C, CI, R = never>(spec: NodeSpec<C, CI, R>): NodeType<R> => {
  const decode = Schema.decodeUnknownEither(spec.config)
  return make<R>({
    type: spec.type,
    description: spec.description,
    role: spec.role,
    inputs: spec.role === "process" ? spec.inputs : spec.role === "input" ? { min: 0, max: 0 } : { min: 1, max: 1 },
    outputType: spec.role === "output" ? spec.outputType : undefined,
    compile: (input, placement) =>
      Either.flatMap(
        Either.mapLeft(decode(input, { onExcessProperty: "error", errors: "all" }), configProblems),
        (config) => {
          const problems = spec.check?.(config, placement) ?? []
          return Arr.isNonEmptyReadonlyArray(problems)
            ? Either.left(problems)
            : Either.right(compiledOf(spec, config, placement))
        }
      )
  })
}
