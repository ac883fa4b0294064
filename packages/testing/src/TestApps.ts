/**
 * App definitions that tests and benchmarks share, and the node types some of them need.
 */
import { NodeType } from "@appexec/core"
import { Effect, Schema } from "effect"

/** `test.chatty`: logs `lines` lines (`line 1` info, `line 2` warn, …), then passes its input on. */
export const chatty = NodeType.defineNode({
  type: "test.chatty",
  description: "Logs lines.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({ lines: Schema.Number }),
  run: ({ config, log, upstream }) =>
    Effect.as(
      Effect.forEach(Array.from({ length: config.lines }, (_, i) => i), (i) =>
        log(`line ${i + 1}`, i % 2 === 0 ? "info" : "warn")),
      upstream[0]!.value
    )
})

/**
 * `Branches` (live executions): a fast branch (prompt → `{{prompt}}!` → text output `fast`)
 * beside a slow one (a 5 s `util.delay` that reports progress → `test.chatty` logging 3 lines →
 * text output `slow`). Needs `chatty` among the instance's nodes.
 */
export const branches = {
  name: "Branches",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "shout", type: "text.template", label: "Shout", config: { template: "{{prompt}}!" } },
    { id: "fast", type: "output.text", label: "Fast", config: {} },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms: 5000 } },
    { id: "talk", type: "test.chatty", label: "Talk", config: { lines: 3 } },
    { id: "slow", type: "output.text", label: "Slow", config: {} }
  ],
  edges: [
    { source: "prompt", target: "shout" },
    { source: "shout", target: "fast" },
    { source: "prompt", target: "wait" },
    { source: "wait", target: "talk" },
    { source: "talk", target: "slow" }
  ]
}

/** `Echo`: a required text `prompt`, templated to `echo: <prompt>`, as the text output `result`. */
export const echo = {
  name: "Echo",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "echo", type: "text.template", label: "Echo", config: { template: "echo: {{prompt}}" } },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [
    { source: "prompt", target: "echo" },
    { source: "echo", target: "result" }
  ]
} as const
