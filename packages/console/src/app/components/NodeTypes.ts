/**
 * A list of node types shortened for a table cell: how many, then the families they belong to
 * (the part before the first dot), a family of one type by the type's name (`provider.comfyui`),
 * one of several by its name and count (`image ×6`), the first few only. The whole list is for
 * the cell's title.
 */

/** The most families named before the rest is elided. */
const FAMILIES_SHOWN = 4

/** `types` in a few words: `3 types: input ×2, provider.comfyui`, `43 types: core ×3, http ×2, image ×6, input ×8, …`. */
export const summarize = (types: ReadonlyArray<string>): string => {
  if (types.length === 0) return "no node types"
  const families = new Map<string, Array<string>>()
  for (const type of [...types].sort()) {
    const dot = type.indexOf(".")
    const family = dot === -1 ? type : type.slice(0, dot)
    const members = families.get(family)
    if (members === undefined) families.set(family, [type])
    else members.push(type)
  }
  const named = [...families].map(([family, members]) =>
    members.length === 1 ? members[0]! : `${family} ×${members.length}`
  )
  const shown = named.length > FAMILIES_SHOWN ? [...named.slice(0, FAMILIES_SHOWN), "…"] : named
  return `${types.length} ${types.length === 1 ? "type" : "types"}: ${shown.join(", ")}`
}
