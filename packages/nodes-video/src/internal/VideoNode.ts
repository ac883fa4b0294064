/**
 * The header the video nodes share, written once: a process node whose run happens in a scope
 * with a temporary directory of its own (`workDir`: removed with everything in it however the run
 * ends, also when it is interrupted, which kills its ffmpeg), and whose failures begin with the
 * words of what it could not do ("the video could not be made").
 */
import { NodeType } from "@appexec/core"
import { Effect, type Schema, type Scope } from "effect"
import { workDir } from "./video.js"

/** What a video node's `run` receives besides the node's context. */
export interface VideoContext<C> extends NodeType.NodeContext<C> {
  /** The run's temporary directory, where ffmpeg reads and writes. */
  readonly dir: string
  /** What each failure of the node begins with. */
  readonly what: string
}

/** A video node: its type, inputs and config, and its run. */
export interface VideoNodeSpec<C, CI, R> {
  /** Unique type name, such as `video.convert`. */
  readonly type: string
  /** One sentence for operators' docs. */
  readonly description: string
  /** How many upstream nodes it reads. */
  readonly inputs: { readonly min: number; readonly max: number }
  readonly config: Schema.Schema<C, CI>
  /** Further import-time checks of the config; each string is one problem. */
  readonly check?: (config: C) => ReadonlyArray<string>
  /** What each failure of the node begins with, such as "the video could not be converted". */
  readonly what: string
  readonly run: (context: VideoContext<C>) => Effect.Effect<NodeType.NodeValue, NodeType.NodeFailure, R | Scope.Scope>
}

/** Defines a video node (`NodeType.defineNode` with the header above). */
export const define = <C, CI, R>(spec: VideoNodeSpec<C, CI, R>) =>
  NodeType.defineNode({
    type: spec.type,
    description: spec.description,
    role: "process",
    inputs: spec.inputs,
    config: spec.config,
    ...(spec.check === undefined ? {} : { check: spec.check }),
    run: (context) =>
      Effect.scoped(
        Effect.flatMap(workDir, (dir) => spec.run({ ...context, dir, what: spec.what }))
      )
  })
