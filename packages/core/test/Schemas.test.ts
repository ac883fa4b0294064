import { App, Envelope, ErrorBody, Execution, Jwk } from "@appexec/api"
import { ExecutionRecord } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"

const json = <A, I>(schema: Schema.Schema<A, I>, value: A) => JSON.stringify(Schema.encodeSync(schema)(value))
const sameJson = (actual: string, expected: unknown) => {
  // Key by key, in order: the encoded text must equal the expected document's text.
  expect(Object.keys(JSON.parse(actual))).toEqual(Object.keys(expected as object))
  expect(actual).toBe(JSON.stringify(expected))
}

const appId = "3f0c1b8e-2d4a-4e5f-9a6b-7c8d9e0f1a2b"
const workflowId = "8a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
const executionId = "0b1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d3e"

describe("resource schemas encode to the JSON of the API (docs/api.md#resources)", () => {
  it("app summary list (docs/api.md#app-summary) with a null description", () => {
    const encoded = json(Envelope.Envelope(Schema.Array(App.AppSummary)), {
      data: [
        App.AppSummary.make({
          appId: appId as App.AppSummary["appId"],
          name: "Poster",
          description: null,
          isPublic: true
        })
      ]
    })
    sameJson(encoded, { data: [{ appId, name: "Poster", description: null, isPublic: true }] })
  })

  it("app detail (docs/api.md#app-detail, §2.3): accept/options/default appear only where given", () => {
    const detail = Schema.decodeUnknownSync(App.AppDetail)({
      appId,
      name: "Poster",
      description: "Renders a poster",
      parameters: [
        { id: "11111111-1111-4111-8111-111111111111", name: "prompt", type: "text", required: true },
        {
          id: "22222222-2222-4222-8222-222222222222",
          name: "style",
          type: "options",
          required: false,
          options: ["flat", "neon"],
          default: "flat"
        },
        { id: "33333333-3333-4333-8333-333333333333", name: "photo", type: "url", required: true, accept: ["image"] }
      ]
    })
    const encoded = json(Envelope.Envelope(App.AppDetail), { data: detail })
    sameJson(encoded, {
      data: {
        appId,
        name: "Poster",
        description: "Renders a poster",
        parameters: [
          { id: "11111111-1111-4111-8111-111111111111", name: "prompt", type: "text", required: true },
          {
            id: "22222222-2222-4222-8222-222222222222",
            name: "style",
            type: "options",
            required: false,
            options: ["flat", "neon"],
            default: "flat"
          },
          { id: "33333333-3333-4333-8333-333333333333", name: "photo", type: "url", required: true, accept: ["image"] }
        ]
      }
    })
    const params = JSON.parse(encoded).data.parameters
    expect(Object.keys(params[0])).toEqual(["id", "name", "type", "required"])
  })

  it("rejects a parameter type outside text/options/url", () => {
    expect(() =>
      Schema.decodeUnknownSync(App.Parameter)({
        id: "11111111-1111-4111-8111-111111111111",
        name: "x",
        type: "number",
        required: true
      })
    ).toThrow()
  })

  it("execution (docs/api.md#execution, §2.5): nulls while queued, ISO 8601 UTC timestamps", () => {
    const execution = Schema.decodeUnknownSync(Execution.Execution)({
      executionId,
      workflowId,
      status: "queued",
      outputs: [{ id: "poster", label: "Poster", type: "pending", value: null, status: "pending", error: null }],
      errorMessage: null,
      startedAt: null,
      completedAt: null,
      createdAt: "2026-11-22T10:00:00.000Z"
    })
    sameJson(json(Envelope.Envelope(Execution.Execution), { data: execution }), {
      data: {
        executionId,
        workflowId,
        status: "queued",
        outputs: [{ id: "poster", label: "Poster", type: "pending", value: null, status: "pending", error: null }],
        errorMessage: null,
        startedAt: null,
        completedAt: null,
        createdAt: "2026-11-22T10:00:00.000Z"
      }
    })
  })

  it("a finished execution projects its record with UTC timestamps", () => {
    const record: ExecutionRecord.ExecutionRecord = {
      executionId: executionId as ExecutionRecord.ExecutionRecord["executionId"],
      workflowId: workflowId as ExecutionRecord.ExecutionRecord["workflowId"],
      appId: appId as ExecutionRecord.ExecutionRecord["appId"],
      workspaceId: appId as ExecutionRecord.ExecutionRecord["workspaceId"],
      userId: appId as ExecutionRecord.ExecutionRecord["userId"],
      status: "failed",
      inputs: { prompt: "cat" },
      outputs: [{ id: "caption", label: "Caption", type: "text", value: null, status: "failed", error: "boom" }],
      errorMessage: "boom",
      webhookUrl: null,
      createdAt: Date.UTC(2026, 10, 22, 10, 0, 0),
      startedAt: Date.UTC(2026, 10, 22, 10, 0, 1, 250),
      completedAt: Date.UTC(2026, 10, 22, 10, 0, 2),
      attempt: 2
    }
    const encoded = JSON.parse(json(Execution.Execution, ExecutionRecord.toExecution(record)))
    expect(encoded).toEqual({
      executionId,
      workflowId,
      appId,
      status: "failed",
      outputs: [{ id: "caption", label: "Caption", type: "text", value: null, status: "failed", error: "boom" }],
      inputs: { prompt: "cat" },
      errorMessage: "boom",
      startedAt: "2026-11-22T10:00:01.250Z",
      completedAt: "2026-11-22T10:00:02.000Z",
      createdAt: "2026-11-22T10:00:00.000Z",
      attempt: 2
    })
    // The extensions in their place: `appId` after the ids, `inputs` after the outputs.
    expect(Object.keys(encoded)).toEqual([
      "executionId",
      "workflowId",
      "appId",
      "status",
      "outputs",
      "inputs",
      "errorMessage",
      "startedAt",
      "completedAt",
      "createdAt",
      "attempt"
    ])
  })

  it("rejects timestamps that are not ISO 8601 UTC", () => {
    for (const bad of ["2026-11-22 10:00:00", "2026-11-22T10:00:00+01:00", "yesterday"]) {
      expect(() => Schema.decodeUnknownSync(Execution.Timestamp)(bad)).toThrow()
    }
  })

  it("start response (docs/api.md#start-an-execution): webhookUrl null when none was given (docs/api.md)", () => {
    const started = Schema.decodeUnknownSync(Execution.StartedExecution)({
      executionId,
      workflowId,
      status: "queued",
      webhookUrl: null,
      outputs: [{ id: "poster", label: "Poster", type: "pending", value: null, status: "pending", error: null }]
    })
    sameJson(json(Envelope.Envelope(Execution.StartedExecution), { data: started }), {
      data: {
        executionId,
        workflowId,
        status: "queued",
        webhookUrl: null,
        outputs: [{ id: "poster", label: "Poster", type: "pending", value: null, status: "pending", error: null }]
      }
    })
  })

  it("workflow graph (docs/api.md#workflow-graph)", () => {
    const graph = Schema.decodeUnknownSync(App.WorkflowGraph)({
      appId,
      name: "Poster",
      nodes: [{ id: "prompt", type: "input.text", label: "Prompt" }],
      edges: [{ source: "prompt", target: "poster" }]
    })
    sameJson(json(Envelope.Envelope(App.WorkflowGraph), { data: graph }), {
      data: {
        appId,
        name: "Poster",
        nodes: [{ id: "prompt", type: "input.text", label: "Prompt" }],
        edges: [{ source: "prompt", target: "poster" }]
      }
    })
  })

  it("key set (docs/api.md#jwk): top-level keys, fixed JWK members", () => {
    const jwk = {
      kty: "OKP",
      crv: "Ed25519",
      x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
      kid: "kid-1",
      use: "sig",
      alg: "EdDSA"
    }
    sameJson(json(Jwk.JwkSet, Schema.decodeUnknownSync(Jwk.JwkSet)({ keys: [jwk] })), { keys: [jwk] })
    expect(() => Schema.decodeUnknownSync(Jwk.Jwk)({ ...jwk, crv: "X25519" })).toThrow()
  })

  it("error body (docs/api.md) with and without details", () => {
    sameJson(json(ErrorBody.ErrorBody, { error: { code: "not_found", message: "App x does not exist." } }), {
      error: { code: "not_found", message: "App x does not exist." }
    })
    const details = [{ parameter: "style", problem: "not_an_option", expected: ["flat", "neon"] }]
    sameJson(json(ErrorBody.ErrorBody, { error: { code: "invalid_inputs", message: "1 input is invalid", details } }), {
      error: { code: "invalid_inputs", message: "1 input is invalid", details }
    })
  })
})
