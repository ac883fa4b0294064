/**
 * `{{nodeId}}` placeholders, as in `text.template`, for URLs and JSON bodies.
 */

/** A `{{nodeId}}` placeholder. */
export const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g

const WHOLE = /^\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}$/

/** The node ids named by placeholders in `text`. */
export const placeholdersOf = (text: string): ReadonlyArray<string> => [...text.matchAll(PLACEHOLDER)].map((m) => m[1]!)

/** Every placeholder in the strings (keys and values) of a JSON value. */
export const placeholdersIn = (json: unknown): ReadonlyArray<string> => {
  if (typeof json === "string") return placeholdersOf(json)
  if (Array.isArray(json)) return json.flatMap(placeholdersIn)
  if (json !== null && typeof json === "object") {
    return Object.entries(json).flatMap(([k, v]) => [...placeholdersOf(k), ...placeholdersIn(v)])
  }
  return []
}

/** `text` with each placeholder replaced by `valueOf(nodeId)`. */
export const fill = (text: string, valueOf: (nodeId: string) => string): string =>
  text.replace(PLACEHOLDER, (_, id: string) => valueOf(id))

/**
 * A JSON value with its placeholders filled: a string that is exactly one placeholder takes the
 * node's JSON value (`jsonOf`), so numbers and objects keep their type; other strings get text.
 */
export const fillJson = (
  json: unknown,
  textOf: (nodeId: string) => string,
  jsonOf: (nodeId: string) => unknown
): unknown => {
  if (typeof json === "string") {
    const whole = WHOLE.exec(json)
    return whole === null ? fill(json, textOf) : jsonOf(whole[1]!)
  }
  if (Array.isArray(json)) return json.map((item) => fillJson(item, textOf, jsonOf))
  if (json !== null && typeof json === "object") {
    return Object.fromEntries(Object.entries(json).map(([k, v]) => [fill(k, textOf), fillJson(v, textOf, jsonOf)]))
  }
  return json
}
