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

/** At most this many problems are listed in `InvalidInputs` (the rest are only counted). */
export const MAX_REPORTED_PROBLEMS = 20

/** An unknown key is echoed back at most this long, in characters (then cut, with "…"). */
export const MAX_ECHOED_KEY_LENGTH = 100

/** Validated inputs: parameter name to value, defaults applied. */
export type ResolvedInputs = Readonly<Record<string, string>>

const URL_EXPECTED = "an absolute http or https URL"

/** True for an absolute `http:` or `https:` URL with a host. */
export const isHttpUrl = (value: string): boolean => {
  // Control characters (NUL among them, which PostgreSQL text cannot hold) are no part of a URL.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value) || !URL.canParse(value)) return false
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
 * Fails with `InvalidRequest` when `inputs` is not an object, and with `InvalidInputs` otherwise:
 * the first `MAX_REPORTED_PROBLEMS` problems are listed and the others counted (`omitted`), the
 * valid names come once (with the first unknown key), and an unknown key is echoed at most
 * `MAX_ECHOED_KEY_LENGTH` characters long, so the answer stays small whatever was sent.
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
  let omitted = 0
  const report = (problem: InputProblem) => {
    if (problems.length < MAX_REPORTED_PROBLEMS) problems.push(problem)
    else omitted++
  }
  let namesGiven = false
  for (const key of Object.keys(given)) {
    if (names.includes(key)) continue
    const parameter = key.length > MAX_ECHOED_KEY_LENGTH ? `${key.slice(0, MAX_ECHOED_KEY_LENGTH)}…` : key
    report(
      namesGiven ? { parameter, problem: "unknown_parameter" } : {
        parameter,
        problem: "unknown_parameter",
        expected: names
      }
    )
    namesGiven = true
  }
  const resolved: Record<string, string> = {}
  for (const parameter of parameters) {
    const raw = Object.hasOwn(given, parameter.name) ? given[parameter.name] : undefined
    if (raw === undefined) {
      if (parameter.default !== undefined) resolved[parameter.name] = parameter.default
      else if (parameter.required) report({ parameter: parameter.name, problem: "missing_required" })
      continue
    }
    if (typeof raw !== "string") {
      report({ parameter: parameter.name, problem: "wrong_type", expected: "a string" })
      continue
    }
    const problem = checkValue(parameter, raw)
    if (problem !== undefined) report(problem)
    else resolved[parameter.name] = raw
  }
  return Arr.isNonEmptyArray(problems)
    ? Either.left(new InvalidInputs(omitted === 0 ? { problems } : { problems, omitted }))
    : Either.right(resolved)
}
