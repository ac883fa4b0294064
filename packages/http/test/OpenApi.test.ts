/**
 * The committed `docs/openapi.json` is what the API definition generates, and it documents
 * the six endpoints, the extensions (cancel, the webhook delivery of an execution, its event
 * stream and logs, uploads) and the operator's routes beside them.
 */
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { OpenApiDocument } from "../src/index.js"

describe("OpenAPI", () => {
  it("docs/openapi.json matches the generated document (run `npm run openapi -w @appexec/http` after changing the API)", () => {
    const committed = readFileSync(new URL("../../../docs/openapi.json", import.meta.url), "utf8")
    expect(committed).toBe(OpenApiDocument.render())
  })

  it("is OpenAPI 3.1 with the six endpoints, the extensions, the operator's routes, both security schemes and the error body", () => {
    const doc = OpenApiDocument.document()
    expect(doc.openapi).toBe("3.1.0")
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).filter((k) => ["get", "post", "put", "patch", "delete"].includes(k)).map((m) =>
        `${m.toUpperCase()} ${path}`
      )
    )
    expect(operations.sort()).toEqual([
      "GET /docs",
      "GET /healthz",
      "GET /openapi.json",
      "GET /readyz",
      "GET /v1/apps",
      "GET /v1/apps/{appId}",
      "GET /v1/apps/{appId}/workflow",
      "GET /v1/executions",
      "GET /v1/executions/{executionId}",
      "GET /v1/executions/{executionId}/events",
      "GET /v1/executions/{executionId}/logs",
      "GET /v1/executions/{executionId}/webhook",
      "GET /v1/webhooks/signing-key",
      "POST /v1/apps/{appId}/executions",
      "POST /v1/executions/{executionId}/cancel",
      "POST /v1/executions/{executionId}/webhook/redeliver",
      "POST /v1/uploads"
    ])
    expect(Object.keys(doc.components.securitySchemes)).toEqual(["apiKey", "bearer"])
    expect(JSON.stringify(doc)).not.toContain("HttpApiDecodeError")
    expect(Object.keys(doc.paths["/v1/apps/{appId}/executions"]!.post!.responses).sort()).toEqual(
      ["202", "400", "401", "403", "404", "409", "413", "429", "500"]
    )
    const start = doc.paths["/v1/apps/{appId}/executions"]!.post!
    expect(start.parameters.map((p: { readonly name: string }) => p.name)).toContain("idempotency-key")
    const poll = doc.paths["/v1/executions/{executionId}"]!.get!
    expect(poll.parameters.map((p: { readonly name: string }) => p.name)).toEqual(
      expect.arrayContaining(["prefer", "if-none-match"])
    )
    // The event stream is server-sent events, refused 406 to a client that will not take them.
    const events = doc.paths["/v1/executions/{executionId}/events"]!.get!
    expect(Object.keys(events.responses["200"]!.content!)).toEqual(["text/event-stream"])
    expect(Object.keys(events.responses).sort()).toEqual(["200", "400", "401", "404", "406", "429", "500"])
    expect(events.parameters.map((p: { readonly name: string }) => p.name)).toEqual(
      expect.arrayContaining(["last-event-id", "lastEventId"])
    )
    for (const name of ["execution", "progress", "log", "keep-alive"]) {
      expect(events.responses["200"]!.description).toContain(name)
    }
    const logs = doc.paths["/v1/executions/{executionId}/logs"]!.get!
    expect(logs.responses["200"]!.content!["application/json"]!.schema).toEqual({
      $ref: "#/components/schemas/LogsResponse"
    })
    // The execution list: its filters and paging, a page of executions with the next cursor.
    const list = doc.paths["/v1/executions"]!.get!
    expect(list.parameters.map((p: { readonly name: string }) => p.name)).toEqual([
      "status",
      "appId",
      "limit",
      "cursor"
    ])
    expect(list.responses["200"]!.content!["application/json"]!.schema).toEqual({
      $ref: "#/components/schemas/ExecutionPage"
    })
    expect(Object.keys(list.responses).sort()).toEqual(["200", "400", "401", "429", "500"])
    // An upload: the file's bytes in, 201 with its signed URL out, 413 and 415 as documented.
    const uploads = doc.paths["/v1/uploads"]!.post!
    expect(Object.keys(uploads.responses).sort()).toEqual(["201", "400", "401", "404", "413", "415", "429", "500"])
    expect(uploads.requestBody?.content).toEqual({
      "application/octet-stream": { schema: expect.objectContaining({ type: "string", format: "binary" }) }
    })
    expect(doc.components.schemas["Upload"]).toMatchObject({
      required: ["url", "contentType", "bytes", "expiresAt"]
    })
    // A redelivery: 202 with the delivery, 404 and 409 as documented.
    const redeliver = doc.paths["/v1/executions/{executionId}/webhook/redeliver"]!.post!
    expect(Object.keys(redeliver.responses).sort()).toEqual(["202", "400", "401", "404", "409", "429", "500"])
    expect(JSON.stringify(redeliver.responses["202"])).toContain("#/components/schemas/WebhookDelivery")
    // Every execution answer documents the extensions appId and inputs, not required.
    const execution = doc.paths["/v1/executions/{executionId}"]!.get!.responses["200"]!
    expect(JSON.stringify(execution)).toContain("ExecutionResponse")
    const schemas = doc.components.schemas as Record<string, { properties?: Record<string, unknown> }>
    const polled = schemas["ExecutionResponse"]!.properties!["data"] as {
      readonly properties: Record<string, unknown>
      readonly required: ReadonlyArray<string>
    }
    expect(Object.keys(polled.properties)).toEqual(expect.arrayContaining(["appId", "inputs"]))
    expect(polled.required).not.toContain("appId")
    expect(polled.required).not.toContain("inputs")
    // The operator's routes take no key and answer only what they say.
    expect(doc.paths["/readyz"]!.get!.security).toEqual([])
    expect(Object.keys(doc.paths["/readyz"]!.get!.responses).sort()).toEqual(["200", "503"])
    expect(Object.keys(doc.paths["/healthz"]!.get!.responses)).toEqual(["200"])
  })
})
