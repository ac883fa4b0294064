/**
 * An app definition (docs/apps.md) made from an API-format ComfyUI workflow and the inputs to
 * expose (`appexec apps import-comfyui workflow_api.json --name … --param prompt=6.text`): one
 * parameter per `name=target` (the target `nodeId.input` or `title.input`, as `provider.comfyui`
 * reads it), its default the value the workflow holds, its label the node's title and the
 * input; a `Load…` node's input becomes a URL parameter of its media kind. The parameters feed
 * one `provider.comfyui` node, whose output goes to an output of the kind the workflow's output
 * node makes (video or image).
 */
import { Either } from "effect"
import * as Workflow from "./Workflow.js"

/** One exposed input: the parameter's name and where it goes in the workflow. */
export interface Param {
  readonly name: string
  readonly target: string
}

/** What the app is made of besides the workflow. */
export interface Options {
  readonly name: string
  readonly description?: string | undefined
  readonly params: ReadonlyArray<Param>
}

const NAME = /^[a-z][a-z0-9_]{0,63}$/

/** A `--param` value `name=target`, or why it is none. */
export const parseParam = (text: string): Either.Either<Param, string> => {
  const eq = text.indexOf("=")
  const name = text.slice(0, eq).trim()
  const target = text.slice(eq + 1).trim()
  if (eq <= 0 || target === "") return Either.left(`--param ${text}: write name=nodeId.input (prompt=6.text)`)
  if (!NAME.test(name)) return Either.left(`--param ${text}: a parameter name is lower-case letters, digits and _`)
  return Either.right({ name, target })
}

/** The kind of media a `Load…` node reads, when the target is one. */
const mediaKindOf = (classType: string): "image" | "video" | "audio" | undefined =>
  !classType.startsWith("Load")
    ? undefined
    : /video/i.test(classType)
    ? "video"
    : /audio/i.test(classType)
    ? "audio"
    : "image"

/** The output node type for the workflow's output nodes: video when they save one, else image (appexec has no audio output yet). */
const outputTypeOf = (workflow: Workflow.Workflow): string => {
  const classes = Object.values(workflow).map((node) => node.class_type)
  if (classes.some((c) => /^Save.*(Video|WEBM|MP4)/i.test(c))) return "output.video"
  return "output.image"
}

/** The app definition of `workflow` (unknown JSON, checked) with `options`, or why there is none. */
export const definitionOf = (workflow: unknown, options: Options): Either.Either<Record<string, unknown>, string> =>
  Either.gen(function*() {
    const decoded = yield* Workflow.decode(workflow)
    const names = new Set<string>()
    const inputs: Record<string, string> = {}
    const parameters: Array<Record<string, unknown>> = []
    for (const param of options.params) {
      if (names.has(param.name)) return yield* Either.left(`parameter '${param.name}' is given twice`)
      names.add(param.name)
      const target = yield* Workflow.targetOf(decoded, param.target)
      const title = decoded[target.nodeId]!._meta?.title ?? target.classType
      const label = `${title}: ${target.input}`
      const kind = mediaKindOf(target.classType)
      const current = target.current
      parameters.push(
        kind !== undefined
          ? { id: param.name, type: "input.url", label, config: { name: param.name, required: true, accept: [kind] } }
          : {
            id: param.name,
            type: "input.text",
            label,
            config: {
              name: param.name,
              ...(current === undefined ? { required: true } : { default: String(current) }),
              ...(typeof current === "number" ? { description: "a number" } : {}),
              ...(typeof current === "string" && (current.length > 60 || target.input === "text")
                ? { multiline: true }
                : {})
            }
          }
      )
      inputs[`${target.nodeId}.${target.input}`] = `{{${param.name}}}`
    }
    if (names.has("render") || names.has("result")) {
      return yield* Either.left("the parameter names render and result are taken by the app's own nodes")
    }
    return {
      name: options.name,
      ...(options.description === undefined ? {} : { description: options.description }),
      nodes: [
        ...parameters,
        { id: "render", type: "provider.comfyui", label: "ComfyUI", config: { workflow: decoded, inputs } },
        { id: "result", type: outputTypeOf(decoded), label: "Result" }
      ],
      edges: [
        ...parameters.map((p) => ({ source: String(p["id"]), target: "render" })),
        { source: "render", target: "result" }
      ]
    }
  })
