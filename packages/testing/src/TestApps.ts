/**
 * App definitions that tests and benchmarks share.
 */

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
