/**
 * The node types every appexec instance has: inputs, text templates, delays, and text and
 * JSON outputs. They are written with the public `defineNode`, like an operator's own.
 */
import { Duration, Effect, Option, Schema } from "effect"
import { isHttpUrl } from "./InputValidation.js"
import * as JsonPointer from "./JsonPointer.js"
import { defineNode, NodeFailure, type NodePlacement, NodeValue, type UpstreamValue } from "./NodeType.js"

const inputFields = {
  /** The parameter name, the key of `inputs`; defaults to the node's label. */
  name: Schema.optional(Schema.NonEmptyTrimmedString),
  required: Schema.optional(Schema.Boolean),
  default: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String)
}

const nameOf = (config: { readonly name?: string | undefined }, placement: NodePlacement) =>
  config.name ?? placement.label

const optionalFields = <
  C extends {
    readonly default?: string | undefined
    readonly description?: string | undefined
    readonly example?: string | undefined
  }
>(
  config: C
) => ({
  ...(config.default === undefined ? {} : { default: config.default }),
  ...(config.description === undefined ? {} : { description: config.description }),
  ...(config.example === undefined ? {} : { example: config.example })
})

/** An example value for a form's empty field (a placeholder), never sent and never a default. */
const example = Schema.optional(Schema.String)

/** `input.text`: a free-form text parameter, on one line unless `multiline`. */
export const inputText = defineNode({
  type: "input.text",
  description: "A free-form text parameter.",
  role: "input",
  config: Schema.Struct({ ...inputFields, example, multiline: Schema.optional(Schema.Boolean) }),
  parameter: (config, placement) => ({
    name: nameOf(config, placement),
    type: "text",
    required: config.required ?? false,
    ...optionalFields(config),
    ...(config.multiline === true ? { multiline: true } : {})
  }),
  run: ({ value }) => Effect.succeed(NodeValue.text(value))
})

/** `input.options`: one label out of a fixed list. */
export const inputOptions = defineNode({
  type: "input.options",
  description: "A parameter whose value is one label of `options`.",
  role: "input",
  config: Schema.Struct({ ...inputFields, options: Schema.NonEmptyArray(Schema.NonEmptyString) }),
  check: (config) => [
    ...(new Set(config.options).size < config.options.length ? ["options must not repeat a label"] : []),
    ...(config.default !== undefined && !config.options.includes(config.default)
      ? [`default '${config.default}' is not one of the options`]
      : [])
  ],
  parameter: (config, placement) => ({
    name: nameOf(config, placement),
    type: "options",
    required: config.required ?? false,
    options: config.options,
    ...optionalFields(config)
  }),
  run: ({ value }) => Effect.succeed(NodeValue.text(value))
})

/** Media kinds a `url` parameter may accept. */
export const MediaKind = Schema.Literal("image", "video", "audio")

/** `input.url`: a public URL of media. */
export const inputUrl = defineNode({
  type: "input.url",
  description: "A parameter whose value is a public http(s) URL of media.",
  role: "input",
  config: Schema.Struct({ ...inputFields, example, accept: Schema.optional(Schema.NonEmptyArray(MediaKind)) }),
  check: (config) => [
    ...(config.default !== undefined && !isHttpUrl(config.default)
      ? ["default must be an absolute http or https URL"]
      : []),
    ...(config.example !== undefined && !isHttpUrl(config.example)
      ? ["example must be an absolute http or https URL"]
      : [])
  ],
  parameter: (config, placement) => ({
    name: nameOf(config, placement),
    type: "url",
    required: config.required ?? false,
    accept: config.accept ?? ["image"],
    ...optionalFields(config)
  }),
  run: ({ config, value }) =>
    Effect.succeed(value === "" ? NodeValue.text("") : NodeValue.url(value, config.accept ?? ["image"]))
})

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g

const noText = (nodeId: string) => new NodeFailure({ message: `node '${nodeId}' produced media, which has no text` })

// The text nodes answer at once, with `Effect.succeed` or `Effect.fail`.
const textOf = (upstream: UpstreamValue): Effect.Effect<string, NodeFailure> => {
  const text = NodeValue.asText(upstream.value)
  return text === undefined ? Effect.fail(noText(upstream.nodeId)) : Effect.succeed(text)
}

/** `text.template`: fills `{{nodeId}}` placeholders with the text of upstream nodes. */
export const textTemplate = defineNode({
  type: "text.template",
  description: "Text with {{nodeId}} placeholders replaced by the values of those upstream nodes.",
  role: "process",
  inputs: { min: 0, max: 32 },
  config: Schema.Struct({ template: Schema.String }),
  check: (config, placement) =>
    [...config.template.matchAll(PLACEHOLDER)]
      .map((m) => m[1]!)
      .filter((id) => !placement.upstream.includes(id))
      .map((id) => `template placeholder {{${id}}} does not name an upstream node`),
  run: ({ config, upstream }) => {
    const texts = new Map<string, string>()
    for (const u of upstream) {
      const text = NodeValue.asText(u.value)
      if (text === undefined) return Effect.fail(noText(u.nodeId))
      texts.set(u.nodeId, text)
    }
    return Effect.succeed(NodeValue.text(config.template.replace(PLACEHOLDER, (_, id: string) => texts.get(id) ?? "")))
  }
})

/** Least time between two progress reports of `util.delay`. */
const DELAY_REPORT_MS = 250

/**
 * `util.delay`: waits, then passes its input on (for long-running demos). A wait of a second or
 * more reports its progress in up to 100 steps, at most one per 250 ms.
 */
export const utilDelay = defineNode({
  type: "util.delay",
  description: "Waits `ms` milliseconds, then passes its input on unchanged, reporting its progress.",
  role: "process",
  inputs: { min: 0, max: 1 },
  config: Schema.Struct({ ms: Schema.Number.pipe(Schema.int(), Schema.between(0, 24 * 60 * 60_000)) }),
  run: ({ config, progress, upstream }) => {
    const value = upstream[0]?.value ?? NodeValue.text("")
    const total = config.ms
    if (total < 1000) return Effect.as(Effect.sleep(Duration.millis(total)), value)
    const step = Math.max(DELAY_REPORT_MS, Math.ceil(total / 100))
    const tick = (elapsed: number): Effect.Effect<NodeValue> => {
      const next = Math.min(total, elapsed + step)
      return Effect.zipRight(
        Effect.sleep(Duration.millis(next - elapsed)),
        Effect.zipRight(
          progress(next / total, `${Math.round(next / 1000)} s of ${Math.round(total / 1000)} s`),
          next === total ? Effect.succeed(value) : Effect.suspend(() => tick(next))
        )
      )
    }
    return Effect.zipRight(progress(0, `0 s of ${Math.round(total / 1000)} s`), tick(0))
  }
})

/**
 * `util.first`: passes on the first upstream value that is given, in edge order: an optional
 * parameter left empty yields empty text, which is passed over. For apps that take a thing or
 * make it (an image URL, else an image drawn from a prompt).
 */
export const utilFirst = defineNode({
  type: "util.first",
  description: "Passes on the first upstream value, in edge order, that is not empty text.",
  role: "process",
  inputs: { min: 1, max: 32 },
  config: Schema.Struct({}),
  run: ({ upstream }) => {
    const given = upstream.find((u) => !(u.value._tag === "Text" && u.value.text === ""))
    return given === undefined
      ? Effect.fail(
        new NodeFailure({ message: `none of ${upstream.map((u) => `'${u.nodeId}'`).join(", ")} was given` })
      )
      : Effect.succeed(given.value)
  }
})

/**
 * `json.pick`: the value at a JSON Pointer of the upstream JSON (or of upstream text that parses
 * as JSON): a string is passed on as text, anything else as JSON. So one node's JSON feeds several
 * outputs: the text that `image.ocr` read to a text output, its lines to a JSON output.
 */
export const jsonPick = defineNode({
  type: "json.pick",
  description: "The value at `pointer` (RFC 6901) of the upstream JSON: a string as text, anything else as JSON.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({ pointer: Schema.String }),
  check: (config) =>
    JsonPointer.isPointer(config.pointer) ? [] : ["pointer must be a JSON Pointer, such as /text or /lines/0"],
  run: ({ config, upstream }) => {
    const { nodeId, value } = upstream[0]!
    let document: unknown
    if (value._tag === "Json") {
      document = value.json
    } else if (value._tag === "Text") {
      try {
        document = JSON.parse(value.text)
      } catch {
        return Effect.fail(new NodeFailure({ message: `node '${nodeId}' produced text that is not valid JSON` }))
      }
    } else {
      const kind = value._tag === "Url" ? "a URL" : "media"
      return Effect.fail(new NodeFailure({ message: `node '${nodeId}' produced ${kind}, not JSON` }))
    }
    const picked = JsonPointer.pick(document, config.pointer)
    if (Option.isNone(picked)) {
      return Effect.fail(new NodeFailure({ message: `nothing at ${config.pointer} in the JSON of node '${nodeId}'` }))
    }
    return Effect.succeed(
      typeof picked.value === "string" ? NodeValue.text(picked.value) : NodeValue.json(picked.value)
    )
  }
})

/** `output.text`: an output whose value is text. */
export const outputText = defineNode({
  type: "output.text",
  description: "An output of type text.",
  role: "output",
  outputType: "text",
  config: Schema.Struct({}),
  run: ({ input, upstream }) => textOf({ nodeId: upstream[0]?.nodeId ?? "upstream", value: input })
})

/** `output.json`: an output whose value is JSON text. */
export const outputJson = defineNode({
  type: "output.json",
  description: "An output of type json: upstream JSON, or upstream text that parses as JSON.",
  role: "output",
  outputType: "json",
  config: Schema.Struct({}),
  run: ({ input }) => {
    switch (input._tag) {
      case "Json":
        return Effect.succeed(JSON.stringify(input.json))
      case "Text":
        return Effect.try({
          try: () => JSON.stringify(JSON.parse(input.text)),
          catch: () => new NodeFailure({ message: "the upstream text is not valid JSON" })
        })
      default:
        return Effect.fail(
          new NodeFailure({ message: `a json output cannot hold a ${input._tag.toLowerCase()} value` })
        )
    }
  }
})

/** Every core node type, in the order they are documented. */
export const coreNodes = [
  inputText,
  inputOptions,
  inputUrl,
  textTemplate,
  utilDelay,
  utilFirst,
  jsonPick,
  outputText,
  outputJson
] as const
