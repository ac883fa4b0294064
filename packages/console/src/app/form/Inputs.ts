/**
 * The values of an app's form, apart from how it looks: what a fresh form shows (a run's inputs,
 * else each parameter's default), whether a text takes several lines, what it sends, and how a
 * problem the server found in an input is said at its field.
 */
import type { InputProblem } from "../api/Api.js"
import type { Parameter } from "../api/Wire.js"

/** A parameter's human name. */
export const nameOf = (parameter: Parameter) => parameter.label ?? parameter.name

/** The values a fresh form shows: `initial` where given, else the parameter's default. */
export const startingValues = (parameters: ReadonlyArray<Parameter>, initial: Readonly<Record<string, string>> = {}) =>
  Object.fromEntries(parameters.map((p) => [p.name, initial[p.name] ?? p.default ?? ""]))

/** Whether a text box for `parameter` starting with `value` takes several lines (a line break fits no other). */
export const isMultiline = (parameter: Parameter, value: string): boolean =>
  parameter.multiline === true || value.includes("\n")

/**
 * The inputs to send: every value given; an empty optional field is left out (the server then
 * takes its default), an empty required one is sent so that the server says what is wrong.
 */
export const inputsOf = (
  parameters: ReadonlyArray<Parameter>,
  values: Readonly<Record<string, string>>
): Record<string, string> =>
  Object.fromEntries(
    parameters
      .map((p) => [p.name, values[p.name] ?? ""] as const)
      .filter(([name, value]) => value !== "" || parameters.find((p) => p.name === name)?.required === true)
  )

/** A problem of the server's, said of a field. */
export const problemText = (problem: InputProblem): string => {
  switch (problem.problem) {
    case "missing_required":
      return "This input is required."
    case "empty":
      return "This input must not be empty."
    case "wrong_type":
      return "This input must be text."
    case "not_an_option":
      return `Choose one of: ${(problem.expected ?? []).join(", ")}.`
    case "invalid_url":
      return "Give an absolute http or https URL."
    case "too_long":
      return "This input is too long."
    case "unknown_parameter":
      return "This app has no such input."
    default:
      return `The server refused this input (${problem.problem}).`
  }
}
