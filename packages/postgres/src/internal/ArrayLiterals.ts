/**
 * Array parameters written as node-postgres writes them (`{"a","2",NULL}`: each value quoted, a
 * backslash or a double quote escaped by a backslash, `NULL` for none), byte for byte, so that
 * PostgreSQL reads the same text, without node-postgres's two regular-expression replacements
 * and copy of each value (the batched saves and inserts send an array per column: up to 1,024
 * values each for a worker's saves, 256 for the inserts).
 */

/** A value of an array parameter. */
export type Element = string | number | bigint | boolean | null | undefined

const special = /[\\"]/
const specials = /[\\"]/g

/** The array literal of `value` for each of `items`, as node-postgres writes an array of them. */
export const arrayLiteral = <A>(items: ReadonlyArray<A>, value: (item: A) => Element): string => {
  let literal = "{"
  for (let i = 0; i < items.length; i++) {
    if (i > 0) literal += ","
    const v = value(items[i]!)
    if (v === null || v === undefined) {
      literal += "NULL"
      continue
    }
    const text = typeof v === "string" ? v : String(v)
    literal += special.test(text) ? `"${text.replace(specials, "\\$&")}"` : `"${text}"`
  }
  return literal + "}"
}
