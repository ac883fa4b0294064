/**
 * Rewrites docs/openapi.json from the API definition, through the built `@appexec/http`
 * (`npm run openapi -w @appexec/http` builds first).
 */
import { OpenApiDocument } from "@appexec/http"
import { writeFileSync } from "node:fs"

const target = new URL("../../../docs/openapi.json", import.meta.url)
writeFileSync(target, OpenApiDocument.render())
console.log(`wrote ${target.pathname}`)
