/**
 * Reading the outputs of an execution (docs/api.md#output). An output's `type`, `status` and `value` are
 * read together, never assuming an image: `view` narrows an output to what it holds (text, a
 * media URL, JSON, a failure, or nothing yet), and the helpers find an output by id or label.
 */
import type * as Execution from "@appexec/api/Execution"

/** One output, narrowed to what it holds. `output` is the output as received. */
export type OutputView =
  /** Not produced yet (or produced without a value). */
  | { readonly kind: "pending"; readonly output: Execution.Output }
  /** A text value. */
  | { readonly kind: "text"; readonly text: string; readonly output: Execution.Output }
  /** A media value: the URL of an image, video or audio file. */
  | {
    readonly kind: "media"
    readonly mediaType: "image" | "video" | "audio"
    readonly url: string
    readonly output: Execution.Output
  }
  /** A JSON value: its text, and the parsed value (`undefined` when the text is not JSON). */
  | { readonly kind: "json"; readonly json: string; readonly value: unknown; readonly output: Execution.Output }
  /** The output failed; `error` says why. */
  | { readonly kind: "failed"; readonly error: string; readonly output: Execution.Output }
  /** A type this client does not know (a newer server); `value` as received. */
  | { readonly kind: "other"; readonly type: string; readonly value: string; readonly output: Execution.Output }

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** What `output` holds. */
export const view = (output: Execution.Output): OutputView => {
  if (output.status === "failed" || output.error !== null) {
    return { kind: "failed", error: output.error ?? "The output failed.", output }
  }
  const value = output.value
  if (output.status !== "completed" || value === null) return { kind: "pending", output }
  switch (output.type) {
    case "text":
      return { kind: "text", text: value, output }
    case "image":
    case "video":
    case "audio":
      return { kind: "media", mediaType: output.type, url: value, output }
    case "json":
      return { kind: "json", json: value, value: parseJson(value), output }
    case "pending":
      return { kind: "pending", output }
    default:
      return { kind: "other", type: String(output.type), value, output }
  }
}

/** The output whose `id` is `key`, else the first whose `label` is `key`. */
export const find = (
  execution: { readonly outputs: ReadonlyArray<Execution.Output> },
  key: string
): Execution.Output | undefined =>
  execution.outputs.find((o) => o.id === key) ?? execution.outputs.find((o) => o.label === key)

/** The view of the output found by id or label, or `undefined` when there is none. */
export const read = (
  execution: { readonly outputs: ReadonlyArray<Execution.Output> },
  key: string
): OutputView | undefined => {
  const output = find(execution, key)
  return output === undefined ? undefined : view(output)
}

/** The text of the output found by id or label, when it is a produced text output. */
export const text = (
  execution: { readonly outputs: ReadonlyArray<Execution.Output> },
  key: string
): string | undefined => {
  const v = read(execution, key)
  return v?.kind === "text" ? v.text : undefined
}

/** The media URL of the output found by id or label, when it is a produced image, video or audio output. */
export const mediaUrl = (
  execution: { readonly outputs: ReadonlyArray<Execution.Output> },
  key: string
): string | undefined => {
  const v = read(execution, key)
  return v?.kind === "media" ? v.url : undefined
}

/** Every output of `execution`, narrowed. */
export const all = (execution: { readonly outputs: ReadonlyArray<Execution.Output> }): ReadonlyArray<OutputView> =>
  execution.outputs.map(view)

/** One line per output for a terminal or a log: `Label (type): value`, `Label: failed: error`, `Label: pending`. */
export const describe = (v: OutputView): string => {
  const label = v.output.label
  switch (v.kind) {
    case "pending":
      return `${label}: pending`
    case "text":
      return `${label} (text): ${v.text}`
    case "media":
      return `${label} (${v.mediaType}): ${v.url}`
    case "json":
      return `${label} (json): ${v.json}`
    case "failed":
      return `${label}: failed: ${v.error}`
    case "other":
      return `${label} (${v.type}): ${v.value}`
  }
}
