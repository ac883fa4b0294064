/**
 * Entity tags and the conditions that name them, as RFC 9110 says (§8.8.3, §13.1.2, §13.1.5):
 * `If-None-Match` compares weakly (`W/"x"` matches `"x"`, and `"x"` matches `W/"x"`), `If-Range`
 * strongly (a weak tag never matches, and neither does a date: appexec sends no `Last-Modified`).
 * The tags appexec makes are strong.
 */

/** A strong entity tag of a body: 53 bits of a fast string hash, in hex (cyrb53). */
export const entityTag = (body: string): string => {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return `"${(4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16)}"`
}

/** One entity tag of a list, as sent: `W/"x"` or `"x"` (a comma may be inside the quotes). */
const TAG = /(W\/)?("[^"]*")/g

/** The tags of a list (`If-None-Match`), each with whether it is weak. */
const tagsOf = (list: string): ReadonlyArray<{ readonly weak: boolean; readonly opaque: string }> =>
  Array.from(list.matchAll(TAG), (m) => ({ weak: m[1] !== undefined, opaque: m[2]! }))

/** The quoted part of a tag (`"x"` of `W/"x"`). */
const opaqueOf = (etag: string) => (etag.startsWith("W/") ? etag.slice(2) : etag)

/**
 * Whether an `If-None-Match` value names `etag` by weak comparison, or is `*` (then the answer is
 * 304 to a GET or HEAD). Absent: no.
 */
export const noneMatch = (ifNoneMatch: string | undefined, etag: string): boolean => {
  if (ifNoneMatch === undefined) return false
  if (ifNoneMatch.trim() === "*") return true
  const opaque = opaqueOf(etag)
  // The common case, one strong tag as the client received it, without a parse.
  if (ifNoneMatch === etag) return true
  return tagsOf(ifNoneMatch).some((tag) => tag.opaque === opaque)
}

/**
 * Whether a `Range` request's `If-Range` lets the range be served: absent, or a strong tag equal
 * to `etag` (itself strong). A weak tag, another tag or a date means the representation may have
 * changed: the whole of it is answered (200), as RFC 9110 §13.1.5 asks.
 */
export const rangeApplies = (ifRange: string | undefined, etag: string): boolean => {
  if (ifRange === undefined) return true
  if (etag.startsWith("W/")) return false
  return ifRange.trim() === etag
}
