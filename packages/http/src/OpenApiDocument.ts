/**
 * The OpenAPI 3.1 document of the API, generated from its `HttpApi` definition. The committed
 * copy is `docs/openapi.json`; `npm run openapi -w @appexec/http` rewrites it and a test fails
 * when it differs from what the code generates.
 */
import { AppexecApi } from "@appexec/api/Api"
import { OpenApi } from "@effect/platform"

/** The document as an object. */
export const document = (): OpenApi.OpenAPISpec => OpenApi.fromApi(AppexecApi)

/** The document as the committed file holds it: two-space JSON with a final newline. */
export const render = (): string => `${JSON.stringify(document(), null, 2)}\n`
