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

/** The node value of `entry`'s output file. */
export const outputOf = (
  server: ComfyApi.Server,
  workflow: Workflow.Workflow,
  entry: ComfyApi.HistoryEntry,
  outputNode: string | undefined,
  maxBytes: number,
  log: NodeType.NodeContext<unknown>["log"]
) =>
  Effect.gen(function*() {
    const wanted = outputNode === undefined
      ? undefined
      : Either.getOrUndefined(Workflow.targetOf(workflow, `${outputNode}.x`))?.nodeId
    const ids = Workflow.nodeIds(workflow).filter((id) =>
      entry.outputs[id] !== undefined && (wanted === undefined || id === wanted)
    )
    const files = ids.flatMap((id) => filesOf(entry.outputs[id]!).map((file) => ({ id, file })))
    const first = files[0]
    if (first === undefined) {
      return yield* Effect.fail(
        fail(`the ComfyUI run produced no output file${wanted === undefined ? "" : ` at node ${wanted}`}`)
      )
    }
    if (files.length > 1) {
      yield* log(`the run produced ${files.length} files; the first (node ${first.id}) is the value`)
    }
    const got = yield* ComfyApi.view(server, first.file, maxBytes)
    const contentType = mediaTypeOf(got.contentType, first.file.filename)
    const kind = Media.kindOf(contentType)
    if (kind === undefined) {
      return yield* Effect.fail(fail(`the output ${first.file.filename} is not media (${contentType})`))
    }
    yield* log(`output: ${first.file.filename}, ${contentType}, ${Media.formatBytes(got.bytes.length)}`)
    return NodeType.NodeValue.media(kind, contentType, got.bytes)
  })
