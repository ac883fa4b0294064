/**
 * The prompt of one run of `provider.comfyui`: the workflow with the node's `inputs` set from
 * upstream values. A text is filled from its `{{nodeId}}` placeholders and takes the type of the
 * value the workflow holds there; an input that is one placeholder naming media (produced
 * media, or a URL set into a `Load…` node) is uploaded to the server first, and the input takes
 * the uploaded file's name.
 */
import { NodeType, type OutboundHttp } from "@appexec/core"
import { Media } from "@appexec/nodes"
import { Effect, Either } from "effect"
import * as Workflow from "../Workflow.js"
import * as ComfyApi from "./ComfyApi.js"

const ONLY_PLACEHOLDER = /^\{\{\s*([A-Za-z0-9_-]+)\s*\}\}$/

const fail = (message: string) => new NodeType.NodeFailure({ message })

/** The extension of a media type, for an uploaded file's name. */
const extensionOf = (contentType: string) =>
  (Media.mediaTypeOf(contentType).split("/")[1] ?? "bin").replace(/[^a-z0-9]/g, "").slice(0, 8)

/** The workflow of `inputs` filled from `upstream`, media uploaded to `server` under names of `promptId`. */
export const promptOf = (
  server: ComfyApi.Server,
  workflow: Workflow.Workflow,
  inputs: Readonly<Record<string, string>>,
  upstream: ReadonlyArray<NodeType.UpstreamValue>,
  promptId: string
): Effect.Effect<Workflow.Workflow, NodeType.NodeFailure, Media.MediaServices | OutboundHttp.OutboundHttp> =>
  Effect.gen(function*() {
    const byId = new Map(upstream.map((u) => [u.nodeId, u]))
    const values: Array<{ readonly target: Workflow.Target; readonly value: unknown }> = []
    let index = 0
    for (const [name, template] of Object.entries(inputs)) {
      index++
      const target = yield* Either.match(Workflow.targetOf(workflow, name), {
        onLeft: (problem) => Effect.fail(fail(problem)),
        onRight: Effect.succeed
      })
      const only = ONLY_PLACEHOLDER.exec(template.trim())?.[1]
      const source = only === undefined ? undefined : byId.get(only)
      const isMedia = source !== undefined &&
        (source.value._tag === "Media" || (source.value._tag === "Url" && target.classType.startsWith("Load")))
      if (source !== undefined && isMedia) {
        const kind = source.value._tag === "Media" ? source.value.kind : (Media.acceptOf(source.value)[0] ?? "image")
        const media = yield* Media.mediaOf(source, kind)
        const filename = `${promptId}-${index}.${extensionOf(media.contentType)}`
        const uploaded = yield* ComfyApi.upload(server, filename, Media.mediaTypeOf(media.contentType), media.bytes)
        values.push({ target, value: uploaded })
        continue
      }
      let mediaRef: string | undefined
      const text = template.replace(Workflow.PLACEHOLDER, (_, id: string) => {
        const value = byId.get(id)?.value
        if (value === undefined) return ""
        if (value._tag === "Media") mediaRef = id
        return NodeType.NodeValue.asText(value) ?? ""
      })
      if (mediaRef !== undefined) {
        return yield* Effect.fail(fail(`input '${name}': node '${mediaRef}' produced media, which fills no text`))
      }
      const value = yield* Either.match(Workflow.valueAs(target.current, text), {
        onLeft: (problem) => Effect.fail(fail(`input '${name}': ${problem}`)),
        onRight: Effect.succeed
      })
      values.push({ target, value })
    }
    return Workflow.withValues(workflow, values)
  })
