/**
 * Writes the generated OpenAPI document to `docs/openapi.json` at the repository root.
 */
import { writeFileSync } from "node:fs"
import { OpenApiDocument } from "../src/index.js"

const target = new URL("../../../docs/openapi.json", import.meta.url)
writeFileSync(target, OpenApiDocument.render())
console.log(`wrote ${target.pathname}`)
