/**
 * App definitions that tests and benchmarks share, and the node types some of them need.
 */
import { NodeType } from "@appexec/core"
import { type Duration, Effect, Schema } from "effect"

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

/**
 * `test.later`: passes its input on after `delay` (it never answers at once); `calls()` counts the
 * calls of its `run`, so a test can tell that no run of it was begun twice.
 */
export const later = (delay: Duration.DurationInput) => {
  let calls = 0
  const node = NodeType.defineNode({
    type: "test.later",
    description: "Answers after a delay",
    role: "process",
    inputs: { min: 1, max: 1 },
    config: Schema.Struct({}),
    run: ({ upstream }) => {
      calls += 1
      return Effect.as(Effect.sleep(delay), upstream[0]!.value)
    }
  })
  return { node, calls: () => calls }
}

/** `Later`: prompt → `echo: {{prompt}}` → `test.later` → text output `result`. Needs `later`'s node. */
export const laterApp = {
  name: "Later",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "echo", type: "text.template", config: { template: "echo: {{prompt}}" } },
    { id: "later", type: "test.later" },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [
    { source: "prompt", target: "echo" },
    { source: "echo", target: "later" },
    { source: "later", target: "result" }
  ]
}

/** `test.throws`: its `run` throws instead of answering (a bug in a node type); `calls()` counts the calls. */
export const throwing = () => {
  let calls = 0
  const node = NodeType.defineNode({
    type: "test.throws",
    description: "Throws instead of answering",
    role: "process",
    inputs: { min: 1, max: 1 },
    config: Schema.Struct({}),
    run: () => {
      calls += 1
      throw new Error("a bug in the node type")
    }
  })
  return { node, calls: () => calls }
}

/** `Throws`: prompt → `test.throws` → text output `result`. Needs `throwing`'s node. */
export const throwsApp = {
  name: "Throws",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "bad", type: "test.throws" },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [{ source: "prompt", target: "bad" }, { source: "bad", target: "result" }]
}
