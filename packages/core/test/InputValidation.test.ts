import { type ErrorBody } from "@appexec/api"
import { Errors, InputValidation, type NodeType } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"

const parameters: ReadonlyArray<NodeType.ParameterSpec> = [
  { name: "prompt", type: "text", required: true },
  { name: "note", type: "text", required: false },
  { name: "style", type: "options", required: false, options: ["flat", "neon"], default: "flat" },
  { name: "size", type: "options", required: true, options: ["S", "M", "L"] },
  { name: "photo", type: "url", required: false, accept: ["image"] }
]
const names = parameters.map((p) => p.name)

const problems = (inputs: unknown): ReadonlyArray<ErrorBody.InputProblem> => {
  const result = InputValidation.validateInputs(parameters, inputs)
  if (Either.isRight(result)) throw new Error(`expected problems, got ${JSON.stringify(result.right)}`)
  if (result.left._tag !== "InvalidInputs") throw new Error(`expected InvalidInputs, got ${result.left._tag}`)
  return result.left.problems
}

describe("input validation (docs/api.md#parameter, §4.4; docs/api.md)", () => {
  it("accepts valid inputs and applies defaults to omitted parameters", () => {
    const resolved = Either.getOrThrow(InputValidation.validateInputs(parameters, { prompt: "a cat", size: "M" }))
    expect(resolved).toEqual({ prompt: "a cat", style: "flat", size: "M" })
  })

  it("keeps a given value over the default, and an empty optional text", () => {
    const resolved = Either.getOrThrow(
      InputValidation.validateInputs(parameters, {
        prompt: "x",
        size: "S",
        style: "neon",
        note: "",
        photo: "https://e.x/a.png"
      })
    )
    expect(resolved).toEqual({ prompt: "x", size: "S", style: "neon", note: "", photo: "https://e.x/a.png" })
  })

  it.each<[string, unknown, ErrorBody.InputProblem]>([
    ["unknown key, with the valid names", { prompt: "x", size: "S", colour: "red" }, {
      parameter: "colour",
      problem: "unknown_parameter",
      expected: names
    }],
    ["keys are case-sensitive (no aliasing)", { Prompt: "x", prompt: "x", size: "S" }, {
      parameter: "Prompt",
      problem: "unknown_parameter",
      expected: names
    }],
    ["a parameter id is not a key", { prompt: "x", size: "S", "11111111-1111-4111-8111-111111111111": "y" }, {
      parameter: "11111111-1111-4111-8111-111111111111",
      problem: "unknown_parameter",
      expected: names
    }],
    ["missing required", { size: "S" }, { parameter: "prompt", problem: "missing_required" }],
    ["required text that is blank", { prompt: "   ", size: "S" }, { parameter: "prompt", problem: "empty" }],
    ["option not in the labels, with the labels", { prompt: "x", size: "XL" }, {
      parameter: "size",
      problem: "not_an_option",
      expected: ["S", "M", "L"]
    }],
    ["option labels are exact", { prompt: "x", size: "s" }, {
      parameter: "size",
      problem: "not_an_option",
      expected: ["S", "M", "L"]
    }],
    ["a number is the wrong type", { prompt: 42, size: "S" }, {
      parameter: "prompt",
      problem: "wrong_type",
      expected: "a string"
    }],
    ["null is the wrong type", { prompt: "x", size: null }, {
      parameter: "size",
      problem: "wrong_type",
      expected: "a string"
    }],
    ["an array is the wrong type", { prompt: ["x"], size: "S" }, {
      parameter: "prompt",
      problem: "wrong_type",
      expected: "a string"
    }],
    ["a relative URL", { prompt: "x", size: "S", photo: "/a.png" }, {
      parameter: "photo",
      problem: "invalid_url",
      expected: "an absolute http or https URL"
    }],
    ["a non-http URL", { prompt: "x", size: "S", photo: "ftp://e.x/a.png" }, {
      parameter: "photo",
      problem: "invalid_url",
      expected: "an absolute http or https URL"
    }],
    ["a javascript: URL", { prompt: "x", size: "S", photo: "javascript:alert(1)" }, {
      parameter: "photo",
      problem: "invalid_url",
      expected: "an absolute http or https URL"
    }],
    ["text over the size limit", { prompt: "x".repeat(InputValidation.MAX_TEXT_LENGTH + 1), size: "S" }, {
      parameter: "prompt",
      problem: "too_long",
      expected: `at most ${InputValidation.MAX_TEXT_LENGTH} characters`
    }]
  ])("reports %s", (_name, inputs, expected) => {
    expect(problems(inputs)).toEqual([expected])
  })

  it("reports every problem at once, unknown keys first, then parameters in order", () => {
    expect(problems({ colour: "red", size: "XL", photo: "nope", prompt: 1 })).toEqual([
      { parameter: "colour", problem: "unknown_parameter", expected: names },
      { parameter: "prompt", problem: "wrong_type", expected: "a string" },
      { parameter: "size", problem: "not_an_option", expected: ["S", "M", "L"] },
      { parameter: "photo", problem: "invalid_url", expected: "an absolute http or https URL" }
    ])
  })

  it("names every problem in the error message", () => {
    const error = new Errors.InvalidInputs({
      problems: [
        { parameter: "size", problem: "not_an_option", expected: ["S", "M"] },
        { parameter: "prompt", problem: "missing_required" }
      ]
    })
    expect(error.message).toBe("2 inputs are invalid: 'size' must be one of: S, M; 'prompt' is required.")
    expect(Errors.toErrorInfo(error)).toEqual({
      code: "invalid_inputs",
      message: error.message,
      details: error.problems
    })
  })

  it("lists at most 20 problems, the valid names once, and counts the others", () => {
    const inputs: Record<string, string> = {}
    for (let i = 0; i < 60_000; i++) inputs[`unknown_${i}`] = "x"
    inputs["k".repeat(5_000)] = "x"
    const result = InputValidation.validateInputs(parameters, inputs)
    if (Either.isRight(result) || result.left._tag !== "InvalidInputs") throw new Error("expected InvalidInputs")
    const error = result.left
    expect(error.problems).toHaveLength(InputValidation.MAX_REPORTED_PROBLEMS)
    expect(error.problems[0]).toEqual({ parameter: "unknown_0", problem: "unknown_parameter", expected: names })
    expect(error.problems.slice(1).every((p) => p.expected === undefined)).toBe(true)
    // 60,001 unknown keys and the two missing required parameters.
    expect(error.omitted).toBe(60_003 - InputValidation.MAX_REPORTED_PROBLEMS)
    expect(error.message).toMatch(/^60003 inputs are invalid \(the first 20 listed\): 'unknown_0' is not a parameter/)
    expect(error.message.split("prompt, note").length).toBe(2)
    expect(JSON.stringify(Errors.toErrorInfo(error)).length).toBeLessThan(4_000)
  })

  it("echoes an unknown key at most 100 characters long", () => {
    const [problem] = problems({ ["k".repeat(10_000)]: "x", prompt: "p", size: "S" })
    expect(problem?.parameter).toBe(`${"k".repeat(InputValidation.MAX_ECHOED_KEY_LENGTH)}…`)
  })

  it.each([null, [], "prompt=x", 3])("refuses inputs that are not an object (%j) as an invalid request", (inputs) => {
    const result = InputValidation.validateInputs(parameters, inputs)
    expect(Either.isLeft(result) && result.left._tag).toBe("InvalidRequest")
  })

  it("does not read inherited properties as inputs", () => {
    const inputs = Object.create({ prompt: "inherited" }) as Record<string, string>
    inputs.size = "S"
    expect(problems(inputs)).toEqual([{ parameter: "prompt", problem: "missing_required" }])
  })
})
