/**
 * Input validation (docs/api.md#parameter, §4.4; docs/api.md): checks an `inputs` object against an app's
 * parameters, applies defaults, and reports every problem at once.
 */
import type { InputProblem } from "@appexec/api/ErrorBody"
import { Array as Arr, Either } from "effect"
import { InvalidInputs, InvalidRequest } from "./Errors.js"
import type { ParameterSpec } from "./NodeType.js"

/** The longest text value accepted, in characters. */
export const MAX_TEXT_LENGTH = 100_000

/** Validated inputs: parameter name to value, defaults applied. */
export type ResolvedInputs = Readonly<Record<string, string>>

const URL_EXPECTED = "an absolute http or https URL"

/** True for an absolute `http:` or `https:` URL with a host. */
export const isHttpUrl = (value: string): boolean => {
  if (!URL.canParse(value)) return false
  const url = new URL(value)
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== ""
}

const checkValue = (parameter: ParameterSpec, value: string): InputProblem | undefined => {
  const name = parameter.name
  if (value.length > MAX_TEXT_LENGTH) {
    return { parameter: name, problem: "too_long", expected: `at most ${MAX_TEXT_LENGTH} characters` }
  }
  switch (parameter.type) {
    case "text":
      return parameter.required && value.trim() === "" ? { parameter: name, problem: "empty" } : undefined
    case "options": {
      const options = parameter.options ?? []
      return options.includes(value) ? undefined : { parameter: name, problem: "not_an_option", expected: options }
    }
    case "url":
      return isHttpUrl(value) ? undefined : { parameter: name, problem: "invalid_url", expected: URL_EXPECTED }
  }
}

/**
 * Validates `inputs` against `parameters`. Keys must be parameter names, exactly (no aliasing,
 * case-sensitive). Every value is a string. An omitted parameter with a `default` takes it; a
 * still-missing required parameter is a problem. A required `text` must not be blank, an
 * `options` value must be one of the labels, a `url` must be an absolute http(s) URL.
 *
 * Fails with `InvalidRequest` when `inputs` is not an object, and with `InvalidInputs` listing
 * every problem otherwise.
 */
export const validateInputs = (
  parameters: ReadonlyArray<ParameterSpec>,
  inputs: unknown
): Either.Either<ResolvedInputs, InvalidInputs | InvalidRequest> => {
  if (typeof inputs !== "object" || inputs === null || Array.isArray(inputs)) {
    return Either.left(new InvalidRequest({ reason: "`inputs` must be an object keyed by parameter name." }))
  }
  const given = inputs as Record<string, unknown>
  const names = parameters.map((p) => p.name)
  const problems: Array<InputProblem> = []
  for (const key of Object.keys(given)) {
    if (!names.includes(key)) problems.push({ parameter: key, problem: "unknown_parameter", expected: names })
  }
  const resolved: Record<string, string> = {}
  for (const parameter of parameters) {
    const raw = Object.hasOwn(given, parameter.name) ? given[parameter.name] : undefined
    if (raw === undefined) {
      if (parameter.default !== undefined) resolved[parameter.name] = parameter.default
      else if (parameter.required) problems.push({ parameter: parameter.name, problem: "missing_required" })
      continue
    }
    if (typeof raw !== "string") {
      problems.push({ parameter: parameter.name, problem: "wrong_type", expected: "a string" })
      continue
    }
    const problem = checkValue(parameter, raw)
    if (problem !== undefined) problems.push(problem)
    else resolved[parameter.name] = raw
  }
  return Arr.isNonEmptyArray(problems) ? Either.left(new InvalidInputs({ problems })) : Either.right(resolved)
}
