/**
 * What the generated OpenAPI document loses on its way out: the framework's own decode-error
 * schema, since every request error is answered in the API's error body.
 */
/** A JSON object, as the OpenAPI document is made of. */
type JsonObject = { [key: string]: unknown }

const isObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * Every request error is answered in the API's error body, decoding errors included (the
 * handlers map them to `BadRequest`), so the framework's own decode-error schema is dropped
 * from the generated document.
 */
export const withoutFrameworkErrors = (spec: JsonObject): JsonObject => {
  const ref = "#/components/schemas/HttpApiDecodeError"
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk)
    if (!isObject(node)) return node
    const out: JsonObject = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v)] as const))
    if (Array.isArray(out.anyOf)) {
      const rest = out.anyOf.filter((s: unknown) => !(isObject(s) && s.$ref === ref))
      if (rest.length !== out.anyOf.length) {
        delete out.anyOf
        const [only] = rest
        return rest.length === 1 && isObject(only) ? { ...out, ...only } : { ...out, anyOf: rest }
      }
    }
    if (out.description === "The request did not match the expected schema") {
      out.description = "The request, its inputs or its webhook URL are invalid."
    }
    return out
  }
  const walked = walk(spec)
  const result: JsonObject = isObject(walked) ? walked : {}
  const components = isObject(result.components) ? result.components : {}
  const schemas = isObject(components.schemas) ? components.schemas : {}
  delete schemas.HttpApiDecodeError
  // Schemas only the framework's decode error referred to.
  for (const name of ["Issue", "PropertyKey"]) {
    const without = JSON.stringify({ ...result, components: { ...components, schemas: { ...schemas, [name]: null } } })
    if (!without.includes(`"#/components/schemas/${name}"`)) delete schemas[name]
  }
  return result
}
