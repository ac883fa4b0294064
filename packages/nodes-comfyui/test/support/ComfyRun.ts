/**
 * How the test ComfyUI server runs one prompt, in the order of ComfyUI's `execution.py` and
 * `main.py`: `execution_start`, `execution_cached`, then for each node in dependency order
 * `executing {node, display_node, prompt_id}`, a sampler's `progress`/`progress_state` with a
 * binary preview frame per step, an output node's `executed`; at the end `execution_success`,
 * the history entry, then `executing {node: null}`. A node class the test names raises
 * (`execution_error`); an interrupt (checked before each node and each step, as
 * `throw_exception_if_processing_interrupted` is) ends it with `execution_interrupted`.
 */
import sharp from "sharp"

/** A node of an API-format prompt. */
export interface PromptNode {
  readonly class_type: string
  readonly inputs: Record<string, unknown>
  readonly _meta?: { readonly title?: string }
}

/** An API-format prompt. */
export type Prompt = Record<string, PromptNode>

/** A file the server wrote (`output`, `temp`) or was sent (`input`). */
export interface StoredFile {
  readonly filename: string
  readonly subfolder: string
  readonly type: "output" | "temp" | "input"
  readonly contentType: string
  readonly bytes: Uint8Array
}

/** The node classes the test server knows; the output nodes among them. */
export const KNOWN_CLASSES = new Set([
  "CheckpointLoaderSimple",
  "CLIPTextEncode",
  "EmptyLatentImage",
  "KSampler",
  "VAEDecode",
  "VAEEncode",
  "LoadImage",
  "SaveImage",
  "PreviewImage"
])
export const OUTPUT_CLASSES = new Set(["SaveImage", "PreviewImage"])

/** What a run reports to the server. */
export interface RunHooks {
  /** Sends a JSON event to the submitting client only (lost when it is not connected). */
  readonly send: (type: string, data: Record<string, unknown>) => void
  /** Sends a binary preview frame (type 1, format 1 JPEG) to the submitting client only. */
  readonly sendPreview: (jpeg: Uint8Array) => void
  /** Resolves before the next step when the test holds the sampler (`ComfyServer.hold`). */
  readonly gate: () => Promise<void>
  /** Resolves when node `node` may run (the test holds the run before it: `Options.holdAt`). */
  readonly before: (node: string) => Promise<void>
  readonly interrupted: () => boolean
  /** Whether the server restarted since the run began: it then stops without a word. */
  readonly abandoned: () => boolean
  readonly setLastNode: (node: string | null) => void
  readonly onStep: (node: string, value: number) => void
  readonly store: (file: StoredFile) => void
  readonly input: (name: string) => StoredFile | undefined
  readonly steps: number
  readonly stepDelayMs: number
  /** The node class that raises, with its exception. */
  readonly failing?: { readonly classType: string; readonly type: string; readonly message: string }
}

/** The end of a run, for its history entry. */
export interface RunEnd {
  readonly status: "success" | "error" | "abandoned"
  readonly outputs: Record<string, Record<string, unknown>>
  readonly messages: Array<[string, Record<string, unknown>]>
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const isLink = (value: unknown): value is [string, number] =>
  Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && typeof value[1] === "number"

/** The node ids of `prompt` in dependency order (inputs before the nodes that read them). */
export const orderOf = (prompt: Prompt): Array<string> => {
  const order: Array<string> = []
  const seen = new Set<string>()
  const visit = (id: string) => {
    if (seen.has(id)) return
    seen.add(id)
    for (const value of Object.values(prompt[id]?.inputs ?? {})) if (isLink(value)) visit(value[0])
    order.push(id)
  }
  for (const id of Object.keys(prompt).sort((a, b) => Number(a) - Number(b))) visit(id)
  return order
}

/** A picture that depends on the prompt's words and seed, `width` × `height`. */
const picture = async (prompt: Prompt, width: number, height: number, format: "png" | "jpeg") => {
  let hash = 7
  for (const char of JSON.stringify(prompt)) hash = (hash * 31 + char.charCodeAt(0)) >>> 0
  const background = { r: hash & 255, g: (hash >>> 8) & 255, b: (hash >>> 16) & 255 }
  return new Uint8Array(
    await sharp({ create: { width, height, channels: 3, background } }).toFormat(format).toBuffer()
  )
}

const sizeOf = (prompt: Prompt) => {
  const latent = Object.values(prompt).find((node) => node.class_type === "EmptyLatentImage")
  const width = typeof latent?.inputs["width"] === "number" ? latent.inputs["width"] : 64
  const height = typeof latent?.inputs["height"] === "number" ? latent.inputs["height"] : 64
  return { width: Math.max(8, Math.min(1024, width)), height: Math.max(8, Math.min(1024, height)) }
}

/** Runs `prompt` as `promptId` on the test server. */
export const run = async (promptId: string, prompt: Prompt, hooks: RunHooks, counter: number): Promise<RunEnd> => {
  const messages: RunEnd["messages"] = []
  const outputs: RunEnd["outputs"] = {}
  const now = () => Date.now()
  const emit = (type: string, data: Record<string, unknown>) => {
    if (hooks.abandoned()) return
    if (type.startsWith("execution_")) messages.push([type, data])
    hooks.send(type, data)
  }
  emit("execution_start", { prompt_id: promptId, timestamp: now() })
  emit("execution_cached", { nodes: [], prompt_id: promptId, timestamp: now() })
  const order = orderOf(prompt)
  const executed: Array<string> = []
  const { width, height } = sizeOf(prompt)
  const interrupt = (node: string) => {
    emit("execution_interrupted", {
      prompt_id: promptId,
      node_id: node,
      node_type: prompt[node]!.class_type,
      executed,
      timestamp: now()
    })
    return { status: "error", outputs, messages } as const
  }
  for (const id of order) {
    await hooks.before(id)
    if (hooks.abandoned()) return { status: "abandoned", outputs, messages }
    if (hooks.interrupted()) return interrupt(id)
    const node = prompt[id]!
    hooks.setLastNode(id)
    emit("executing", { node: id, display_node: id, prompt_id: promptId })
    if (hooks.failing !== undefined && node.class_type === hooks.failing.classType) {
      emit("execution_error", {
        prompt_id: promptId,
        node_id: id,
        node_type: node.class_type,
        executed,
        exception_message: hooks.failing.message,
        exception_type: hooks.failing.type,
        traceback: [`  File "execution.py", line 496, in execute\n`],
        current_inputs: {},
        current_outputs: {},
        timestamp: now()
      })
      return { status: "error", outputs, messages }
    }
    if (node.class_type === "KSampler") {
      const max = typeof node.inputs["steps"] === "number" ? Math.min(node.inputs["steps"], hooks.steps) : hooks.steps
      for (let value = 1; value <= max; value++) {
        await hooks.gate()
        if (hooks.abandoned()) return { status: "abandoned", outputs, messages }
        if (hooks.interrupted()) return interrupt(id)
        await delay(hooks.stepDelayMs)
        hooks.onStep(id, value)
        emit("progress", { value, max, prompt_id: promptId, node: id })
        emit("progress_state", {
          prompt_id: promptId,
          nodes: {
            [id]: { value, max, state: "running", node_id: id, prompt_id: promptId, display_node_id: id }
          }
        })
        if (!hooks.abandoned()) hooks.sendPreview(await picture(prompt, 16, 16, "jpeg"))
      }
    } else if (OUTPUT_CLASSES.has(node.class_type)) {
      const type = node.class_type === "SaveImage" ? "output" : "temp"
      const prefix = typeof node.inputs["filename_prefix"] === "string" ? node.inputs["filename_prefix"] : "ComfyUI"
      const filename = `${type === "temp" ? "ComfyUI_temp" : prefix}_${String(counter).padStart(5, "0")}_.png`
      hooks.store({
        filename,
        subfolder: "",
        type,
        contentType: "image/png",
        bytes: await picture(prompt, width, height, "png")
      })
      const output = { images: [{ filename, subfolder: "", type }] }
      outputs[id] = output
      emit("executed", { node: id, display_node: id, output, prompt_id: promptId })
    } else if (node.class_type === "LoadImage" && hooks.input(String(node.inputs["image"])) === undefined) {
      emit("execution_error", {
        prompt_id: promptId,
        node_id: id,
        node_type: node.class_type,
        executed,
        exception_message: `[Errno 2] No such file or directory: '${String(node.inputs["image"])}'`,
        exception_type: "FileNotFoundError",
        traceback: [],
        current_inputs: {},
        current_outputs: {},
        timestamp: now()
      })
      return { status: "error", outputs, messages }
    }
    executed.push(id)
  }
  emit("execution_success", { prompt_id: promptId, timestamp: now() })
  return { status: "success", outputs, messages }
}
