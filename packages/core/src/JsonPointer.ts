/**
 * JSON Pointer (RFC 6901): one value picked out of a JSON document, as `json.pick` does.
 */
import { Option } from "effect"

/** Whether `pointer` is a syntactically valid JSON Pointer (`""` is the whole document). */
export const isPointer = (pointer: string): boolean => /^(\/([^~/]|~[01])*)*$/.test(pointer)

/** The reference tokens of a valid pointer. */
const tokens = (pointer: string): ReadonlyArray<string> =>
  pointer === "" ? [] : pointer.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"))

/** The value `pointer` designates in `document`, if there is one. */
export const pick = (document: unknown, pointer: string): Option.Option<unknown> => {
  let current: unknown = document
  for (const token of tokens(pointer)) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) >= current.length) return Option.none()
      current = current[Number(token)]
    } else if (current !== null && typeof current === "object" && Object.hasOwn(current, token)) {
      current = Reflect.get(current, token)
    } else {
      return Option.none()
    }
  }
  return Option.some(current)
}
