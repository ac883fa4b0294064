/**
 * The partial result of one run of `provider.comfyui`: each `executed` event adds its ComfyUI
 * node's files to the run's outputs so far, and the first time these make a file the node's value
 * (`Output.chosenOf`, the rule of its final value) that file is read with `/view` and shown as the
 * node's partial result (`partial` of its context, which shows an output's first partial only):
 * while it runs, the execution shows what it would end with were the run to end then. A file that
 * cannot be read is logged, not shown, and the run goes on.
 */
import type { NodeType, OutboundHttp } from "@appexec/core"
import { Effect } from "effect"
import type * as Workflow from "../Workflow.js"
import type * as ComfyApi from "./ComfyApi.js"
import { chosenOf, mediaOf, type Outputs } from "./Output.js"

/** What a run's partial results need. */
export interface Options {
  readonly server: ComfyApi.Server
  readonly workflow: Workflow.Workflow
  readonly outputNode: string | undefined
  readonly maxBytes: number
  readonly partial: NodeType.NodeContext<unknown>["partial"]
  readonly log: NodeType.NodeContext<unknown>["log"]
}

/** A file shown as the node's partial result, and its value. */
export interface Shown {
  readonly file: ComfyApi.FileRef
  readonly value: NodeType.NodeValue
}

/** The partial results of a run. */
export interface Partials {
  /** Takes the `executed` event of ComfyUI node `node` with its `output`; never fails. */
  readonly executed: (
    node: string,
    output: Readonly<Record<string, unknown>>
  ) => Effect.Effect<void, never, OutboundHttp.OutboundHttp>
  /** The file shown, if any. */
  readonly shown: () => Shown | undefined
}

/** The partial results of a run, none shown yet. */
export const make = (options: Options): Partials => {
  const outputs: Record<string, Outputs[string]> = {}
  let shown: Shown | undefined
  return {
    executed: (node, output) =>
      Effect.gen(function*() {
        outputs[node] = output
        const chosen = chosenOf(options.workflow, outputs, options.outputNode)
        if (chosen === undefined || shown !== undefined) return
        const media = yield* mediaOf(options.server, chosen.file, options.maxBytes)
        shown = { file: chosen.file, value: media.value }
        yield* options.log(`partial output: ${media.said} (ComfyUI node ${chosen.id})`)
        yield* options.partial(media.value)
      }).pipe(
        Effect.catchAll((failure) => options.log(`a partial output not shown: ${failure.message}`, "warn"))
      ),
    shown: () => shown
  }
}
