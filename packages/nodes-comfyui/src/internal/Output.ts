/**
 * The value of a finished run of `provider.comfyui`: the first file its history lists (of the
 * output node the config names, else of every output node in the workflow's order), read with
 * `/view` within the media size limit, its media type from the answer or else from its name.
 */
import { NodeType } from "@appexec/core"
import { Media } from "@appexec/nodes"
import { Effect, Either, Schema } from "effect"
import * as Workflow from "../Workflow.js"
import * as ComfyApi from "./ComfyApi.js"

const TYPES: Readonly<Record<string, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
  mp4: "video/mp4",
  webm: "video/webm",
  mov: "video/quicktime",
  flac: "audio/flac",
  mp3: "audio/mpeg",
  wav: "audio/wav",
  ogg: "audio/ogg"
}

const fail = (message: string) => new NodeType.NodeFailure({ message })

/** The files of one output node's entry (`images`, `gifs`, `audio`, …), in order. */
export const filesOf = (output: Readonly<Record<string, unknown>>): Array<ComfyApi.FileRef> =>
  Object.values(output).flatMap((value) =>
    Array.isArray(value)
      ? value.flatMap((item) =>
        Either.getOrElse(Schema.decodeUnknownEither(ComfyApi.FileRef)(item).pipe(Either.map((f) => [f])), () => [])
      )
      : []
  )

/** The media type of an output file: the answer's when it is media, else the one of its extension. */
export const mediaTypeOf = (answered: string, filename: string): string => {
  const type = Media.mediaTypeOf(answered)
  if (Media.kindOf(type) !== undefined) return type
  return TYPES[filename.split(".").at(-1)?.toLowerCase() ?? ""] ?? type
}

/** The outputs of a run by ComfyUI node id: its history's, or those its `executed` events showed so far. */
export type Outputs = Readonly<Record<string, Readonly<Record<string, unknown>>>>

/** A file of a run, the output node that wrote it, and how many files the chosen nodes wrote in all. */
export interface Chosen {
  readonly id: string
  readonly file: ComfyApi.FileRef
  readonly count: number
}

/**
 * The file that is the node's value when the run's outputs are `outputs`: the first file of the
 * output node the config names, else of every output node in the workflow's order.
 */
export const chosenOf = (
  workflow: Workflow.Workflow,
  outputs: Outputs,
  outputNode: string | undefined
): Chosen | undefined => {
  const wanted = outputNode === undefined
    ? undefined
    : Either.getOrUndefined(Workflow.targetOf(workflow, `${outputNode}.x`))?.nodeId
  const ids = Workflow.nodeIds(workflow).filter((id) =>
    outputs[id] !== undefined && (wanted === undefined || id === wanted)
  )
  const files = ids.flatMap((id) => filesOf(outputs[id]!).map((file) => ({ id, file })))
  return files[0] === undefined ? undefined : { ...files[0], count: files.length }
}

/** Whether two references name the same file. */
export const sameFile = (a: ComfyApi.FileRef, b: ComfyApi.FileRef) =>
  a.filename === b.filename && a.subfolder === b.subfolder && a.type === b.type

/** The node value of `file`, read with `/view` within `maxBytes`: media of the type its answer or name says. */
export const mediaOf = (server: ComfyApi.Server, file: ComfyApi.FileRef, maxBytes: number) =>
  Effect.gen(function*() {
    const got = yield* ComfyApi.view(server, file, maxBytes)
    const contentType = mediaTypeOf(got.contentType, file.filename)
    const kind = Media.kindOf(contentType)
    if (kind === undefined) {
      return yield* Effect.fail(fail(`the output ${file.filename} is not media (${contentType})`))
    }
    return {
      value: NodeType.NodeValue.media(kind, contentType, got.bytes),
      said: `${file.filename}, ${contentType}, ${Media.formatBytes(got.bytes.length)}`
    }
  })

/**
 * The node value of `entry`'s output file; `shown` is the value of a file shown already as a
 * partial result (`Partials`), taken as it is when it is the same file.
 */
export const outputOf = (
  server: ComfyApi.Server,
  workflow: Workflow.Workflow,
  entry: ComfyApi.HistoryEntry,
  outputNode: string | undefined,
  maxBytes: number,
  log: NodeType.NodeContext<unknown>["log"],
  shown?: { readonly file: ComfyApi.FileRef; readonly value: NodeType.NodeValue }
) =>
  Effect.gen(function*() {
    const chosen = chosenOf(workflow, entry.outputs, outputNode)
    if (chosen === undefined) {
      return yield* Effect.fail(
        fail(`the ComfyUI run produced no output file${outputNode === undefined ? "" : ` at node ${outputNode}`}`)
      )
    }
    if (chosen.count > 1) {
      yield* log(`the run produced ${chosen.count} files; the first (node ${chosen.id}) is the value`)
    }
    if (shown !== undefined && sameFile(shown.file, chosen.file)) {
      yield* log(`output: ${chosen.file.filename}, as shown while the run went on`)
      return shown.value
    }
    const media = yield* mediaOf(server, chosen.file, maxBytes)
    yield* log(`output: ${media.said}`)
    return media.value
  })
