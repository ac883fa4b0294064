/**
 * What the embedding tests share: the apps they run, a logger that keeps its lines, and an
 * instance in memory closed after each test.
 */
import { NodeType } from "@appexec/core"
import { Effect, Schema } from "effect"
import { afterEach } from "vitest"
import { type Appexec, createAppexec, type HostLogger, type Options } from "../src/index.js"

/** A greeting: a required `who`, an optional tone. */
export const greeting = {
  name: "Greeting",
  nodes: [
    { id: "who", type: "input.text", label: "Who", config: { name: "who", required: true } },
    {
      id: "tone",
      type: "input.options",
      label: "Tone",
      config: { name: "tone", options: ["warm", "formal"], default: "warm" }
    },
    { id: "compose", type: "text.template", label: "Compose", config: { template: "Hello {{who}}, {{tone}}." } },
    { id: "greeting", type: "output.text", label: "Greeting" }
  ],
  edges: [
    { source: "who", target: "compose" },
    { source: "tone", target: "compose" },
    { source: "compose", target: "greeting" }
  ]
}

/** An app that waits `ms` before it answers (`util.delay`), for cancels and drains. */
export const waiting = (ms: number, name = "Waiting") => ({
  name,
  nodes: [
    { id: "who", type: "input.text", label: "Who", config: { name: "who" } },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms } },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [{ source: "who", target: "wait" }, { source: "wait", target: "out" }]
})

/** A node type of the host's own: repeats its input text `times` times, and logs that it did. */
export const textRepeat = NodeType.defineNode({
  type: "text.repeat",
  description: "Repeats the upstream text `times` times.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({ times: Schema.Number.pipe(Schema.int(), Schema.between(1, 10)) }),
  run: ({ config, upstream }) => {
    const text = NodeType.NodeValue.asText(upstream[0]!.value)
    return text === undefined
      ? Effect.fail(new NodeType.NodeFailure({ message: "expects text" }))
      : Effect.as(
        Effect.logInfo(`repeated ${config.times} times`),
        NodeType.NodeValue.text(text.repeat(config.times))
      )
  }
})

/** An app over `text.repeat`. */
export const echo = {
  name: "Echo",
  nodes: [
    { id: "text", type: "input.text", label: "Text", config: { name: "text", required: true } },
    { id: "repeat", type: "text.repeat", label: "Repeat", config: { times: 3 } },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [{ source: "text", target: "repeat" }, { source: "repeat", target: "out" }]
}

/** One line a `Recorder` received: its level, message and fields. */
export interface Line {
  readonly level: "debug" | "info" | "warn" | "error"
  readonly message: string
  readonly fields: Readonly<Record<string, unknown>>
}

/** A console-like logger that keeps every line. */
export const recorder = (): HostLogger & { readonly lines: Array<Line> } => {
  const lines: Array<Line> = []
  const at = (level: Line["level"]) => (message: unknown, fields?: unknown) =>
    void lines.push({
      level,
      message: String(message),
      fields: typeof fields === "object" && fields !== null ? { ...fields } : {}
    })
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }
}

const open: Array<Appexec> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((appexec) => appexec.close()))
})

/** An instance in memory with `text.repeat` (closed after the test), and its logger. */
export const memoryInstance = async (options: Omit<Options, "nodes" | "services"> = {}) => {
  const logger = recorder()
  const appexec = await createAppexec({
    storage: { memory: true },
    nodes: [textRepeat],
    logger,
    drain: 0,
    ...options
  })
  open.push(appexec)
  return { appexec, logger }
}
