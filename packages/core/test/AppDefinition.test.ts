import { Ids } from "@appexec/api"
import { AppDefinition, CoreNodes, NodeRegistry } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"

const registry = Effect.runSync(Effect.provide(NodeRegistry.NodeRegistry, NodeRegistry.layer(CoreNodes.coreNodes)))

const poster = {
  name: "Poster",
  description: "Titles a prompt",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    {
      id: "style",
      type: "input.options",
      label: "Style",
      config: { name: "style", options: ["flat", "neon"], default: "flat" }
    },
    { id: "photo", type: "input.url", label: "Photo" },
    { id: "title", type: "text.template", label: "Title", config: { template: "{{prompt}} in {{ style }} style" } },
    { id: "caption", type: "output.text", label: "Caption" }
  ],
  edges: [
    { source: "prompt", target: "title" },
    { source: "style", target: "title" },
    { source: "title", target: "caption" }
  ]
}

const problemsOf = (definition: unknown) => {
  const result = AppDefinition.compile(definition, registry)
  if (Either.isRight(result)) throw new Error("expected the definition to be refused")
  return result.left.problems
}

const withChanges = (change: (d: typeof poster) => unknown) => change(structuredClone(poster))

describe("app definitions (docs/apps.md)", () => {
  it("compiles a valid definition: topological order, parameters and outputs", () => {
    const app = Either.getOrThrow(AppDefinition.compile(poster, registry))
    const order = app.nodes.map((n) => n.id)
    expect(order.indexOf("title")).toBeGreaterThan(order.indexOf("prompt"))
    expect(order.indexOf("caption")).toBeGreaterThan(order.indexOf("title"))
    expect(app.parameters).toEqual([
      { nodeId: "prompt", label: "Prompt", name: "prompt", type: "text", required: true },
      {
        nodeId: "style",
        label: "Style",
        name: "style",
        type: "options",
        required: false,
        options: ["flat", "neon"],
        default: "flat"
      },
      { nodeId: "photo", label: "Photo", name: "Photo", type: "url", required: false, accept: ["image"] }
    ])
    expect(app.outputs).toEqual([{ id: "caption", label: "Caption", type: "text" }])
  })

  it("carries an input's example and multiline to its parameter, and checks them", () => {
    const asked = withChanges((d) => ({
      ...d,
      nodes: d.nodes.map((node) =>
        node.id === "prompt"
          ? { ...node, config: { ...node.config, multiline: true, example: "A lighthouse at dusk" } }
          : node.id === "photo"
          ? { ...node, config: { example: "https://example.com/dusk.png" } }
          : node
      )
    }))
    const app = Either.getOrThrow(AppDefinition.compile(asked, registry))
    expect(app.parameters.map(({ example, multiline, name }) => ({ name, example, multiline }))).toEqual([
      { name: "prompt", example: "A lighthouse at dusk", multiline: true },
      { name: "style", example: undefined, multiline: undefined },
      { name: "Photo", example: "https://example.com/dusk.png", multiline: undefined }
    ])
    // `multiline: false` says nothing: the parameter is left as one without it.
    const single = withChanges((d) => ({
      ...d,
      nodes: d.nodes.map((node) =>
        node.id === "prompt" ? { ...node, config: { ...node.config, multiline: false } } : node
      )
    }))
    expect(Either.getOrThrow(AppDefinition.compile(single, registry)).parameters[0]).not.toHaveProperty("multiline")

    const wrong = problemsOf(withChanges((d) => ({
      ...d,
      nodes: d.nodes.map((node) =>
        node.id === "photo"
          ? { ...node, config: { example: "dusk.png" } }
          : node.id === "style"
          ? { ...node, config: { ...node.config, multiline: true } }
          : node
      )
    })))
    expect(wrong.map((p) => p.node).sort()).toEqual(["photo", "style"])
    expect(wrong.find((p) => p.node === "photo")?.message).toBe("example must be an absolute http or https URL")
  })

  it.each([
    [
      "unknown node type",
      (d: typeof poster) => ({ ...d, nodes: [...d.nodes, { id: "magic", type: "image.magic" }] }),
      {
        node: "magic",
        message: `unknown node type 'image.magic' (registered types: ${
          CoreNodes.coreNodes.map((n) => n.type).join(", ")
        })`
      }
    ],
    [
      "duplicate id",
      (d: typeof poster) => ({ ...d, nodes: [...d.nodes, { id: "title", type: "output.text" }] }),
      { node: "title", message: "duplicate node id" }
    ],
    [
      "dangling edge",
      (d: typeof poster) => ({ ...d, edges: [...d.edges, { source: "ghost", target: "caption" }] }),
      { node: "ghost", message: "edge ghost → caption refers to node 'ghost', which does not exist" }
    ],
    [
      "input node with an incoming edge",
      (d: typeof poster) => ({ ...d, edges: [...d.edges, { source: "prompt", target: "style" }] }),
      { node: "style", message: "input node has incoming edges (from prompt)" }
    ],
    [
      "output node with an outgoing edge",
      (d: typeof poster) => ({
        ...d,
        nodes: [...d.nodes, { id: "again", type: "text.template", config: { template: "x" } }],
        edges: [...d.edges, { source: "caption", target: "again" }]
      }),
      { node: "caption", message: "output node has outgoing edges (to again)" }
    ],
    [
      "config the node type rejects",
      (d: typeof poster) => ({
        ...d,
        nodes: d.nodes.map((n) => (n.id === "title" ? { ...n, config: { template: 42 } } : n))
      }),
      { node: "title", message: "config.template: Expected string, actual 42" }
    ],
    [
      "unknown config key",
      (d: typeof poster) => ({
        ...d,
        nodes: d.nodes.map((n) => (n.id === "title" ? { ...n, config: { template: "x", colour: "red" } } : n))
      }),
      { node: "title", message: "config.colour: unknown key; expected one of \"template\"" }
    ],
    [
      "a template naming a node that is not upstream",
      (d: typeof poster) => ({
        ...d,
        nodes: d.nodes.map((n) => (n.id === "title" ? { ...n, config: { template: "{{photo}}" } } : n))
      }),
      { node: "title", message: "template placeholder {{photo}} does not name an upstream node" }
    ],
    [
      "an options default outside the options",
      (d: typeof poster) => ({
        ...d,
        nodes: d.nodes.map((n) => (n.id === "style" ? { ...n, config: { options: ["flat"], default: "neon" } } : n))
      }),
      { node: "style", message: "default 'neon' is not one of the options" }
    ],
    [
      "two inputs with one parameter name",
      (d: typeof poster) => ({
        ...d,
        nodes: d.nodes.map((n) => (n.id === "photo" ? { ...n, config: { name: "prompt" } } : n))
      }),
      { node: "photo", message: "parameter name 'prompt' is already used by node 'prompt'" }
    ],
    [
      "an output with two incoming edges",
      (d: typeof poster) => ({ ...d, edges: [...d.edges, { source: "prompt", target: "caption" }] }),
      { node: "caption", message: "output node needs exactly one incoming edge, has 2" }
    ],
    [
      "no output node",
      (d: typeof poster) => ({ ...d, nodes: d.nodes.filter((n) => n.id !== "caption"), edges: d.edges.slice(0, 2) }),
      { node: null, message: "the app has no output node" }
    ]
  ])("reports %s, naming the node", (_name, change, expected) => {
    expect(problemsOf(withChanges(change))).toContainEqual(expected)
  })

  it("reports a cycle with its path", () => {
    const problems = problemsOf({
      name: "Loop",
      nodes: [
        { id: "a", type: "text.template", config: { template: "{{c}}" } },
        { id: "b", type: "text.template", config: { template: "{{a}}" } },
        { id: "c", type: "text.template", config: { template: "{{b}}" } },
        { id: "out", type: "output.text" }
      ],
      edges: [
        { source: "a", target: "b" },
        { source: "b", target: "c" },
        { source: "c", target: "a" },
        { source: "c", target: "out" }
      ]
    })
    expect(problems).toEqual([{ node: "a", message: "cycle: a → b → c → a" }])
  })

  it("reports every problem at once", () => {
    const problems = problemsOf({
      ...poster,
      nodes: [...poster.nodes, { id: "magic", type: "image.magic" }, { id: "prompt", type: "input.text" }],
      edges: [...poster.edges, { source: "ghost", target: "title" }]
    })
    expect(problems.map((p) => p.node)).toEqual(expect.arrayContaining(["prompt", "magic", "ghost"]))
    expect(problems.length).toBeGreaterThanOrEqual(3)
  })

  it("takes a concurrency, a positive integer, and refuses any other", () => {
    const app = Either.getOrThrow(AppDefinition.compile({ ...poster, concurrency: 5 }, registry))
    expect(app.definition.concurrency).toBe(5)
    expect(Either.getOrThrow(AppDefinition.compile(poster, registry)).definition.concurrency).toBeUndefined()
    for (const concurrency of [0, -1, 1.5, "2"]) {
      expect(new Set(problemsOf({ ...poster, concurrency }).map((p) => p.message.split(":")[0]))).toEqual(
        new Set(["concurrency"])
      )
    }
  })

  it("refuses a structurally wrong file with the path of each problem", () => {
    const problems = problemsOf({ name: "", nodes: [{ id: "has space", type: "input.text" }], edges: {} })
    const messages = problems.map((p) => p.message)
    expect(messages.some((m) => m.startsWith("name:"))).toBe(true)
    expect(messages.some((m) => m.startsWith("nodes.0.id:"))).toBe(true)
    expect(messages.some((m) => m.startsWith("edges:"))).toBe(true)
  })

  it("derives stable parameter ids that are UUIDs, never the name", () => {
    const appId = Ids.AppId.make("3f0c1b8e-2d4a-4e5f-9a6b-7c8d9e0f1a2b")
    const id = AppDefinition.parameterIdOf(appId, "prompt")
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(id).not.toBe("prompt")
    expect(AppDefinition.parameterIdOf(appId, "prompt")).toBe(id)
    expect(AppDefinition.parameterIdOf(appId, "style")).not.toBe(id)
  })

  it("keeps the workflowId for the same content and changes it for changed content", () => {
    const appId = Ids.AppId.make("3f0c1b8e-2d4a-4e5f-9a6b-7c8d9e0f1a2b")
    const compiled = (d: unknown) => Either.getOrThrow(AppDefinition.compile(d, registry)).definition
    const first = AppDefinition.workflowIdOf(appId, compiled(poster))
    const reordered = {
      edges: poster.edges,
      nodes: poster.nodes,
      public: true,
      description: poster.description,
      name: poster.name
    }
    expect(AppDefinition.workflowIdOf(appId, compiled(reordered))).toBe(first)
    const changed = withChanges((d) => ({
      ...d,
      nodes: d.nodes.map((n) => (n.id === "title" ? { ...n, config: { template: "{{prompt}}!" } } : n)),
      edges: d.edges.filter((e) => e.source !== "style")
    }))
    expect(AppDefinition.workflowIdOf(appId, compiled(changed))).not.toBe(first)
  })
})
