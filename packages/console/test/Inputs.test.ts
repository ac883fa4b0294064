/**
 * What the app page's form starts with and sends, which text boxes take several lines, how the
 * server's problems are said, the priority it sends, the same request as curl and as client code
 * (the key never in them), and the console's routes.
 */
import { Execution } from "@appexec/api"
import { describe, expect, it } from "@effect/vitest"
import { keyHint } from "../src/app/api/Session.js"
import type { Parameter } from "../src/app/api/Wire.js"
import { between, formatDuration } from "../src/app/components/Time.js"
import { inputsOf, isMultiline, nameOf, problemText, startingValues } from "../src/app/form/Inputs.js"
import { PRIORITY_MAX, PRIORITY_MIN, requestedPriority } from "../src/app/form/Priority.js"
import * as Snippets from "../src/app/form/Snippets.js"
import { pathOf, type Route, routeOf } from "../src/app/Routes.js"

const parameters: ReadonlyArray<Parameter> = [
  { id: "1", name: "prompt", type: "text", required: true, label: "What to draw", description: "One sentence." },
  { id: "2", name: "style", type: "options", required: false, options: ["flat", "neon"], default: "flat" },
  { id: "3", name: "photo", type: "url", required: false, accept: ["image"] }
]

describe("the form's values", () => {
  it("start with the defaults, or a run's inputs where given", () => {
    expect(startingValues(parameters)).toEqual({ prompt: "", style: "flat", photo: "" })
    expect(startingValues(parameters, { prompt: "a lighthouse", style: "neon", gone: "x" })).toEqual({
      prompt: "a lighthouse",
      style: "neon",
      photo: ""
    })
    expect(parameters.map(nameOf)).toEqual(["What to draw", "style", "photo"])
  })

  it("are one line of text unless the parameter asks for several, or the value it starts with holds a line break", () => {
    const text = { id: "1", name: "prompt", type: "text", required: false } as const
    expect(isMultiline(text, "one line")).toBe(false)
    expect(isMultiline({ ...text, multiline: true }, "")).toBe(true)
    expect(isMultiline(text, "two\nlines")).toBe(true)
  })

  it("send what was given, an empty required input too, and leave empty optional ones out", () => {
    expect(inputsOf(parameters, { prompt: "", style: "flat", photo: "" })).toEqual({ prompt: "", style: "flat" })
    expect(inputsOf(parameters, { prompt: "x", style: "", photo: "https://e.example/a.png" })).toEqual({
      prompt: "x",
      photo: "https://e.example/a.png"
    })
  })

  it("say the server's problems in words", () => {
    expect(problemText({ parameter: "style", problem: "not_an_option", expected: ["flat", "neon"] })).toBe(
      "Choose one of: flat, neon."
    )
    expect(problemText({ parameter: "prompt", problem: "empty" })).toBe("This input must not be empty.")
    expect(problemText({ parameter: "x", problem: "something_new" })).toContain("something_new")
  })
})

describe("the request as code", () => {
  const request = {
    baseUrl: "http://127.0.0.1:8080/api",
    appId: "0ad80bd0-7068-46b8-ab79-7a931999410b",
    inputs: { prompt: "it's a \"test\"" },
    webhook: "https://example.com/hook?a=1"
  }

  it("as curl: the inputs quoted for the shell, the webhook encoded, the key from the environment", () => {
    expect(Snippets.curl(request)).toBe(
      [
        "curl -X POST -H \"x-api-key: $APPEXEC_API_KEY\" -H 'content-type: application/json' \\",
        "  -d '{\"inputs\":{\"prompt\":\"it'\\''s a \\\"test\\\"\"}}' \\",
        "  'http://127.0.0.1:8080/api/v1/apps/0ad80bd0-7068-46b8-ab79-7a931999410b/executions?webhook=https%3A%2F%2Fexample.com%2Fhook%3Fa%3D1'"
      ].join("\n")
    )
    expect(Snippets.curl({ ...request, webhook: undefined })).not.toContain("webhook")
  })

  it("as client code: start and wait on @appexec/client", () => {
    const code = Snippets.clientCode(request)
    expect(code).toContain("import { createClient, Outputs } from \"@appexec/client\"")
    expect(code).toContain(
      "createClient({ baseUrl: \"http://127.0.0.1:8080/api\", apiKey: process.env.APPEXEC_API_KEY! })"
    )
    expect(code).toContain(
      "appexec.executions.start(\"0ad80bd0-7068-46b8-ab79-7a931999410b\", {\n  \"prompt\": \"it's a \\\"test\\\"\"\n}, { webhook: \"https://example.com/hook?a=1\" })"
    )
    expect(code).toContain("await appexec.executions.wait(started.executionId)")
  })

  it("with a priority: in the body and in the client's options, with or without a webhook", () => {
    expect(Snippets.curl({ ...request, priority: 3 })).toContain(
      "-d '{\"inputs\":{\"prompt\":\"it'\\''s a \\\"test\\\"\"},\"priority\":3}'"
    )
    expect(Snippets.clientCode({ ...request, priority: -2 })).toContain(
      "}, { webhook: \"https://example.com/hook?a=1\", priority: -2 })"
    )
    expect(Snippets.clientCode({ ...request, webhook: undefined, priority: 5 })).toContain("}, { priority: 5 })")
  })
})

describe("the form's priority", () => {
  it("sends an integer from -10 to 10 other than 0, and nothing for the default or a value the server would refuse", () => {
    expect([PRIORITY_MIN, PRIORITY_MAX]).toEqual([Execution.PRIORITY_MIN, Execution.PRIORITY_MAX])
    expect(["", " ", "0", "-0", "11", "-11", "1.5", "x"].map(requestedPriority)).toEqual(Array(8).fill(undefined))
    expect(["10", " -10 ", "3"].map(requestedPriority)).toEqual([10, -10, 3])
  })
})

describe("the console's routes", () => {
  it("read a path under the console, and write it back", () => {
    const cases: ReadonlyArray<readonly [string, Route]> = [
      ["/", { name: "apps" }],
      ["", { name: "apps" }],
      ["/apps", { name: "apps" }],
      ["/apps/", { name: "apps" }],
      ["/apps/a%20b", { name: "app", appId: "a b" }],
      ["/runs", { name: "runs" }],
      ["/runs/0000", { name: "run", executionId: "0000" }],
      ["/runs/1/2", { name: "notFound" }],
      ["/elsewhere", { name: "notFound" }]
    ]
    for (const [path, route] of cases) expect(routeOf(path), path).toEqual(route)
    for (const route of [{ name: "app", appId: "a/b?" }, { name: "run", executionId: "x" }] as const) {
      expect(routeOf(pathOf(route))).toEqual(route)
    }
  })
})

describe("what the console says of times and keys", () => {
  it("durations in the largest units that say them", () => {
    expect([850, 4_200, 42_000, 185_000, 7_800_000].map(formatDuration)).toEqual([
      "850 ms",
      "4.2 s",
      "42 s",
      "3 min 5 s",
      "2 h 10 min"
    ])
    expect(between("2026-11-22T10:00:00.000Z", "2026-11-22T10:00:01.500Z")).toBe("1.5 s")
    expect(between("2026-11-22T10:00:00.000Z", null)).toBe("—")
  })

  it("a key's hint shows its prefix and last four characters only", () => {
    const key = "aex_axo3_RY7VGGm4y1tnuSKoi1O1ghfWZ0CMScrvLkTwVA"
    expect(keyHint(key)).toBe("aex_axo3…TwVA")
    expect(keyHint("short")).toBe("…")
  })
})
