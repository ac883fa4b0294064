/**
 * The OpenAPI 3.1 document of the API, generated from its `HttpApi` definition, with the
 * operator's routes beside `/v1` (`/healthz`, `/readyz`, `/openapi.json`, `/docs`). The committed
 * copy is `docs/openapi.json`; `npm run openapi -w @appexec/http` rewrites it and a test fails
 * when it differs from what the code generates.
 */
import { AppexecApi } from "@appexec/api/Api"
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"

const Ok = Schema.Struct({ status: Schema.Literal("ok") }).annotations({ identifier: "OperatorOk" })
const Unavailable = Schema.Struct({
  status: Schema.Literal("unavailable"),
  reason: Schema.String.annotations({ description: "Why not: `draining`, or storage did not answer." })
}).annotations({ identifier: "OperatorUnavailable" })

/** The operator's routes, outside `/v1`: no key, no rate limit. */
export class OperatorGroup extends HttpApiGroup.make("operator")
  .add(
    HttpApiEndpoint.get("healthz", "/healthz")
      .addSuccess(Ok)
      .annotate(OpenApi.Summary, "Liveness")
      .annotate(OpenApi.Description, "The process is up.")
  )
  .add(
    HttpApiEndpoint.get("readyz", "/readyz")
      .addSuccess(Ok)
      .addError(Unavailable, { status: 503 })
      .annotate(OpenApi.Summary, "Readiness")
      .annotate(OpenApi.Description, "Storage answers and the instance is not draining (shutting down); else 503.")
  )
  .add(
    HttpApiEndpoint.get("openapi", "/openapi.json")
      .addSuccess(Schema.Unknown.annotations({ description: "This document." }))
      .annotate(OpenApi.Summary, "OpenAPI document")
  )
  .add(
    HttpApiEndpoint.get("docs", "/docs")
      .addSuccess(HttpApiSchema.Text({ contentType: "text/html" }))
      .annotate(OpenApi.Summary, "API reference page")
  )
{}

const OperatorApi = HttpApi.make("operator").add(OperatorGroup)

/** The operator's paths: they take no input, so the framework's 400 for undecodable input does not apply. */
const operatorPaths = (paths: OpenApi.OpenAPISpec["paths"]): OpenApi.OpenAPISpec["paths"] =>
  Object.fromEntries(
    Object.entries(paths).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item).map(([method, operation]) => {
          if (typeof operation !== "object" || operation === null || !("responses" in operation)) {
            return [method, operation]
          }
          const { 400: _dropped, ...responses } = operation.responses
          return [method, { ...operation, responses }]
        })
      )
    ])
  )

/** The document as an object. */
export const document = (): OpenApi.OpenAPISpec => {
  const api = OpenApi.fromApi(AppexecApi)
  const operator = OpenApi.fromApi(OperatorApi)
  return {
    ...api,
    paths: { ...api.paths, ...operatorPaths(operator.paths) },
    components: {
      ...api.components,
      // The operator's own schemas; not the framework's decode error, which its paths no longer name.
      schemas: {
        ...api.components.schemas,
        ...Object.fromEntries(
          Object.entries(operator.components.schemas).filter(([name]) => name.startsWith("Operator"))
        )
      }
    },
    tags: [...(api.tags ?? []), ...(operator.tags ?? [])]
  }
}

/** The document as the committed file holds it: two-space JSON with a final newline. */
export const render = (): string => `${JSON.stringify(document(), null, 2)}\n`
