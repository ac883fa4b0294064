/**
 * The HTTP API of appexec: the six endpoints of docs/api.md#endpoints and the additive extensions of docs/api.md#extensions (cancel, idempotent starts, long and conditional polling, the webhook delivery of an execution and its redelivery, live executions, the execution list, uploads), under `/v1`, declared with
 * `HttpApi` from core's schemas. This module has no Node imports: `@appexec/client` builds its
 * typed client from it, and the OpenAPI document is generated from it.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import {
  BadRequest,
  Conflict,
  Forbidden,
  InternalError,
  NotAcceptable,
  NotFound,
  PayloadTooLarge,
  TooManyRequests,
  Unauthenticated,
  UnsupportedMediaType
} from "./ApiError.js"
import * as App from "./App.js"
import { Authentication } from "./Authentication.js"
import * as Envelope from "./Envelope.js"
import * as Execution from "./Execution.js"
import { withoutFrameworkErrors } from "./internal/OpenApiDocument.js"
import * as Jwk from "./Jwk.js"
import * as Live from "./Live.js"
import * as Upload from "./Upload.js"

/**
 * A UUID path id. Declared as a string with the `uuid` format so that an id that is not a UUID
 * answers 404 like any other id that does not exist, rather than a decoding error.
 */
const PathId = (description: string) =>
  Schema.String.annotations({ description, jsonSchema: { type: "string", format: "uuid", description } })

/** Default and bounds of the app list's `limit`. */
export const LIST_LIMIT = { default: 10, min: 1, max: 100 } as const

/** Path of the app endpoints. */
export const AppPath = Schema.Struct({ appId: PathId("Identifier of the app.") })

/** Path of the execution endpoint. */
export const ExecutionPath = Schema.Struct({ executionId: PathId("Identifier returned by the start request.") })

/** Query of the app list (docs/api.md#list-apps, docs/api.md). */
export const ListAppsQuery = Schema.Struct({
  search: Schema.optional(
    Schema.String.annotations({ description: "Filters apps by name or description, case-insensitive." })
  ),
  limit: Schema.optional(
    Schema.String.pipe(
      Schema.pattern(/^[0-9]{1,3}$/),
      Schema.compose(Schema.NumberFromString),
      Schema.int(),
      Schema.between(LIST_LIMIT.min, LIST_LIMIT.max)
    ).annotations({
      jsonSchema: {
        type: "integer",
        minimum: LIST_LIMIT.min,
        maximum: LIST_LIMIT.max,
        default: LIST_LIMIT.default,
        description: `Maximum number of public apps; the workspace's own apps are always included.`
      }
    })
  )
})

/** Default and bounds of the execution list's `limit` (docs/api.md#list-executions). */
export const EXECUTION_LIST_LIMIT = { default: 20, min: 1, max: 100 } as const

/** A UUID, as a query parameter: anything else is a 400 that says so. */
const QueryUuid = (description: string) =>
  Schema.String.pipe(
    Schema.pattern(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/)
  ).annotations({ jsonSchema: { type: "string", format: "uuid", description } })

/** Query of the execution list (docs/api.md#list-executions). */
export const ListExecutionsQuery = Schema.Struct({
  status: Schema.optional(
    Execution.ExecutionStatus.annotations({ description: "Only the executions in this status." })
  ),
  appId: Schema.optional(QueryUuid("Only the executions of this app.")),
  limit: Schema.optional(
    Schema.String.pipe(
      Schema.pattern(/^[0-9]{1,3}$/),
      Schema.compose(Schema.NumberFromString),
      Schema.int(),
      Schema.between(EXECUTION_LIST_LIMIT.min, EXECUTION_LIST_LIMIT.max)
    ).annotations({
      jsonSchema: {
        type: "integer",
        minimum: EXECUTION_LIST_LIMIT.min,
        maximum: EXECUTION_LIST_LIMIT.max,
        default: EXECUTION_LIST_LIMIT.default,
        description: "Executions per page."
      }
    })
  ),
  cursor: Schema.optional(
    Schema.String.annotations({
      description: "The `nextCursor` of the page before, to read the page after it; opaque."
    })
  )
})

/** What the events of a start's webhook are, in the query and in the body (docs/webhooks.md#events). */
const webhookEventsDescription =
  "The events the webhook receives: `start`, `output`, `logs`, `completed` (default `completed` alone, the completion webhook). `output` and `logs` are sent at most once every 500 ms each, the last one always. Needs `webhook`."

/** Query of the start request (docs/api.md#start-an-execution). */
export const StartExecutionQuery = Schema.Struct({
  webhook: Schema.optional(
    Schema.String.annotations({
      description: "An absolute http or https URL that receives the signed result on completion (URL-encoded)."
    })
  ),
  webhookEvents: Schema.optional(
    Schema.String.annotations({
      description: `Comma-separated, as \`start,output,completed\`. ${webhookEventsDescription}`
    })
  )
})

/** Body of the start request (docs/api.md#start-an-execution): input values keyed by parameter name, exactly as the app names them. */
export const StartExecutionPayload = Schema.Struct({
  inputs: Schema.Record({ key: Schema.String, value: Schema.String }).annotations({
    description: "Values keyed by parameter name (case-sensitive): an option label, a public URL or a string."
  }),
  webhookEvents: Schema.optional(
    Schema.Array(Execution.WebhookEvent).annotations({
      description:
        `${webhookEventsDescription} As the query's \`webhookEvents\`; when both are sent they must name the same events.`
    })
  ),
  priority: Schema.optional(Execution.Priority)
}).annotations({ identifier: "StartExecutionRequest" })

/** Longest hold of a long poll (`Prefer: wait=N`), in seconds. */
export const MAX_WAIT_SECONDS = 60

/** Headers of the start request: an optional `Idempotency-Key` (docs/api.md#idempotent-starts). */
export const StartExecutionHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(
    Schema.String.annotations({
      description:
        "1 to 255 visible ASCII characters. A repeat of the same request with the same key within 24 h answers the first execution again; the same key with another request answers 409 `idempotency_key_reused`."
    })
  )
})

/** Headers of the execution read: long polling and conditional polling (docs/api.md#long-polling). */
export const GetExecutionHeaders = Schema.Struct({
  prefer: Schema.optional(
    Schema.String.annotations({
      description:
        `\`wait=N\` (1 to ${MAX_WAIT_SECONDS}): hold the answer until the execution is finished or N seconds have passed; with \`If-None-Match\`, until it differs from that answer (its first change). The answer then carries \`Preference-Applied: wait=N\`.`
    })
  ),
  "if-none-match": Schema.optional(
    Schema.String.annotations({
      description:
        "The `ETag` of an earlier answer: 304 with no body while the execution is unchanged; with `Prefer: wait=N`, held until it changes (304 after N seconds without a change)."
    })
  )
})

/** `{ data: [App summary] }`. */
export const AppListResponse = Envelope.Envelope(Schema.Array(App.AppSummary)).annotations({ identifier: "AppList" })
/** `{ data: App detail }`. */
export const AppDetailResponse = Envelope.Envelope(App.AppDetail).annotations({ identifier: "AppDetailResponse" })
/** `{ data: Workflow graph }`. */
export const WorkflowResponse = Envelope.Envelope(App.WorkflowGraph).annotations({ identifier: "WorkflowResponse" })
/** `{ data: started execution }`, answered with 202. */
export const StartedExecutionResponse = Envelope.Envelope(Execution.StartedExecution).annotations({
  identifier: "StartedExecutionResponse"
})
/** `{ data: Execution }`. */
export const ExecutionResponse = Envelope.Envelope(Execution.Execution).annotations({ identifier: "ExecutionResponse" })

/** `GET /v1/apps`: the caller's apps and the public ones. */
export const listApps = HttpApiEndpoint.get("listApps", "/apps")
  .setUrlParams(ListAppsQuery)
  .addSuccess(AppListResponse)
  .annotate(OpenApi.Summary, "List apps")
  .annotate(OpenApi.Description, "The apps of the caller's workspace, then up to `limit` public apps.")

/** `GET /v1/apps/{appId}`: an app's parameters. */
export const getApp = HttpApiEndpoint.get("getApp", "/apps/:appId")
  .setPath(AppPath)
  .addSuccess(AppDetailResponse)
  .addError(Forbidden)
  .addError(NotFound)
  .annotate(OpenApi.Summary, "Get app details")
  .annotate(OpenApi.Description, "The app's parameters: the source of truth for the keys and values of `inputs`.")

/** `GET /v1/apps/{appId}/workflow`: an app's workflow graph. */
export const getWorkflow = HttpApiEndpoint.get("getWorkflow", "/apps/:appId/workflow")
  .setPath(AppPath)
  .addSuccess(WorkflowResponse)
  .addError(Forbidden)
  .addError(NotFound)
  .annotate(OpenApi.Summary, "Get app workflow structure")

/** `POST /v1/apps/{appId}/executions`: starts an execution (202, queued). */
export const startExecution = HttpApiEndpoint.post("startExecution", "/apps/:appId/executions")
  .setPath(AppPath)
  .setUrlParams(StartExecutionQuery)
  .setHeaders(StartExecutionHeaders)
  .setPayload(StartExecutionPayload)
  .addSuccess(StartedExecutionResponse, { status: 202 })
  .addError(BadRequest)
  .addError(Forbidden)
  .addError(NotFound)
  .addError(Conflict)
  .addError(PayloadTooLarge)
  .annotate(OpenApi.Summary, "Start an execution")
  .annotate(
    OpenApi.Description,
    "Validates the inputs and queues an execution. 202 means queued: outputs are placeholders with null values."
  )

/** `GET /v1/executions/{executionId}`: an execution's status and outputs. */
export const getExecution = HttpApiEndpoint.get("getExecution", "/executions/:executionId")
  .setPath(ExecutionPath)
  .setHeaders(GetExecutionHeaders)
  .addSuccess(ExecutionResponse)
  .addError(NotFound)
  .annotate(OpenApi.Summary, "Get execution status and outputs")
  .annotate(
    OpenApi.Description,
    "Poll every 3 to 5 seconds until `status` is `completed` or `failed`, or hold the request with `Prefer: wait=N`. Every answer carries an `ETag`; `If-None-Match` with it answers 304 while the execution is unchanged."
  )

/** `GET /v1/executions`: the executions of the caller's workspace, newest first, a page at a time. */
export const listExecutions = HttpApiEndpoint.get("listExecutions", "/executions")
  .setUrlParams(ListExecutionsQuery)
  .addSuccess(Execution.ExecutionPage)
  .annotate(OpenApi.Summary, "List executions")
  .annotate(
    OpenApi.Description,
    `The executions of the caller's workspace, newest first, \`limit\` (${EXECUTION_LIST_LIMIT.default} by default) at a time, each as \`GET /v1/executions/{executionId}\` answers it (without \`queuePosition\`). Filter by \`status\` and \`appId\`; follow \`nextCursor\` for the next page.`
  )

/** `POST /v1/executions/{executionId}/cancel`: stops an execution (202 with the execution). */
export const cancelExecution = HttpApiEndpoint.post("cancelExecution", "/executions/:executionId/cancel")
  .setPath(ExecutionPath)
  .addSuccess(ExecutionResponse, { status: 202 })
  .addError(NotFound)
  .addError(Conflict)
  .annotate(OpenApi.Summary, "Cancel an execution")
  .annotate(
    OpenApi.Description,
    "A queued execution fails at once; a running one is interrupted where it runs within a second. It ends `failed` with \"The execution was canceled.\" and its webhook is sent. 409 `execution_finished` when it has already finished."
  )

/** `{ data: webhook delivery }`, `null` when the execution has no webhook. */
export const WebhookDeliveryResponse = Envelope.Envelope(Schema.NullOr(Execution.WebhookDelivery)).annotations({
  identifier: "WebhookDeliveryResponse"
})

/** `GET /v1/executions/{executionId}/webhook`: how the delivery of an execution's webhook went. */
export const getExecutionWebhook = HttpApiEndpoint.get("getExecutionWebhook", "/executions/:executionId/webhook")
  .setPath(ExecutionPath)
  .addSuccess(WebhookDeliveryResponse)
  .addError(NotFound)
  .annotate(OpenApi.Summary, "Get the webhook delivery of an execution")
  .annotate(
    OpenApi.Description,
    "Whether the execution's webhook was delivered, is pending or failed, with every attempt and why it failed, and every event's delivery in `deliveries`; data is null when the execution has no webhook."
  )

/** `{ data: webhook delivery }` of a redelivery, answered with 202. */
export const RedeliveryResponse = Envelope.Envelope(Execution.WebhookDelivery).annotations({
  identifier: "RedeliveryResponse"
})

/** Query of a redelivery: which delivery (docs/webhooks.md#events); the completion webhook when absent. */
export const RedeliverQuery = Schema.Struct({
  delivery: Schema.optional(
    Schema.String.annotations({
      description:
        "The `id` of one of the execution's `deliveries` (its `webhook-id`): that event is sent once more. Without it, the completion webhook."
    })
  )
})

/** `POST /v1/executions/{executionId}/webhook/redeliver`: one more attempt to deliver a finished execution's webhook. */
export const redeliverExecutionWebhook = HttpApiEndpoint.post(
  "redeliverExecutionWebhook",
  "/executions/:executionId/webhook/redeliver"
)
  .setPath(ExecutionPath)
  .setUrlParams(RedeliverQuery)
  .addSuccess(RedeliveryResponse, { status: 202 })
  .addError(NotFound)
  .addError(Conflict)
  .annotate(OpenApi.Summary, "Redeliver the webhook of an execution")
  .annotate(
    OpenApi.Description,
    "Sends the webhook of a finished execution once more: one attempt, signed when it is sent, with the execution as it is now; no retries follow it. With `delivery`, that event's delivery instead (its body as first sent; the execution need not have finished). Answers the webhook's deliveries as `GET /v1/executions/{executionId}/webhook` shows them, the one armed `pending` with its earlier attempts. 409 `webhook_not_redeliverable` when the execution has no webhook, has not finished (without `delivery`), has no such delivery, or the delivery is still under way."
  )

/** Headers of the event stream: where to resume (docs/api.md#live-executions). */
export const ExecutionEventsHeaders = Schema.Struct({
  "last-event-id": Schema.optional(
    Schema.String.annotations({
      description:
        "The `id` of the last event received: the stream resumes after it, or starts afresh with the execution when that point is no longer kept. An `EventSource` sends it itself when it reconnects."
    })
  )
})

/** Query of the event stream: `lastEventId`, for clients that cannot set headers. */
export const ExecutionEventsQuery = Schema.Struct({
  lastEventId: Schema.optional(
    Schema.String.annotations({
      description: "As `Last-Event-ID`, for clients that cannot set headers; the header wins when both are sent."
    })
  )
})

/** The answer of the event stream: server-sent events, described event by event. */
export const EventStream = HttpApiSchema.Text({ contentType: "text/event-stream" }).annotations({
  description:
    `Server-sent events, each with an increasing \`id\` (send the last one back as \`Last-Event-ID\` to resume after it) and JSON \`data\`:
- \`execution\`: the execution exactly as \`GET /v1/executions/{executionId}\` answers its \`data\`; sent first, then at every change of its status or outputs. The stream ends after the one that shows it \`completed\` or \`failed\`.
- \`progress\`: \`{ nodeId, fraction, message }\`, how far a node is (0 to 1, never lower than before).
- \`log\`: \`{ at, level, nodeId, message }\`, a line a node logged (\`level\` \`info\`, \`warn\` or \`error\`).
While nothing else is sent, a comment (\`: keep-alive\`) comes every ${Live.HEARTBEAT_SECONDS} seconds.`
})

/** `GET /v1/executions/{executionId}/events`: the execution's live events, as server-sent events. */
export const getExecutionEvents = HttpApiEndpoint.get("getExecutionEvents", "/executions/:executionId/events")
  .setPath(ExecutionPath)
  .setUrlParams(ExecutionEventsQuery)
  .setHeaders(ExecutionEventsHeaders)
  .addSuccess(EventStream)
  .addError(NotFound)
  .addError(NotAcceptable)
  .annotate(OpenApi.Summary, "Follow an execution's live events")
  .annotate(
    OpenApi.Description,
    "The execution, its changes, its nodes' progress and log lines as server-sent events, until it is `completed` or `failed`. 406 when `Accept` excludes `text/event-stream`. The stream counts once against the rate limit; one API key holds at most `maxStreamsPerKey` streams open at once (100 by default), 429 `rate_limited` beyond."
  )

/** `GET /v1/executions/{executionId}/logs`: the kept log lines of an execution. */
export const getExecutionLogs = HttpApiEndpoint.get("getExecutionLogs", "/executions/:executionId/logs")
  .setPath(ExecutionPath)
  .addSuccess(Live.LogsResponse)
  .addError(NotFound)
  .annotate(OpenApi.Summary, "Get an execution's log lines")
  .annotate(
    OpenApi.Description,
    "The log lines its nodes wrote, oldest first, as kept: the last 1,000 lines or 64 KiB, older ones replaced by a line (`nodeId` null) that says how many were dropped."
  )

/** `GET /v1/webhooks/signing-key`: the keys that verify webhook signatures. */
export const getSigningKey = HttpApiEndpoint.get("getSigningKey", "/webhooks/signing-key")
  .addSuccess(Jwk.JwkSet.annotations({ identifier: "JwkSet" }))
  .annotate(OpenApi.Summary, "Get webhook verification key")
  .annotate(OpenApi.Description, "Ed25519 public keys (JWK) that verify webhook signatures; cache them.")

/** Default bound of an upload's body: 25 MiB (docs/api.md#uploads). */
export const DEFAULT_MAX_UPLOAD_BYTES = 25 * 1024 * 1024

/** `{ data: Upload }`, answered with 201. */
export const UploadResponse = Envelope.Envelope(Upload.Upload).annotations({ identifier: "UploadResponse" })

/** The body of an upload: the file's bytes as they are, its type in `Content-Type`. */
export const UploadPayload = HttpApiSchema.Uint8Array({ contentType: "application/octet-stream" }).annotations({
  description:
    "The file's bytes, with its own media type as `Content-Type` (for example `image/png`; the type shown here stands for any of them): PNG, JPEG, GIF, WebP or AVIF images, MP4, QuickTime or WebM video, MP3, WAV, Ogg, M4A or WebM audio. The bytes must be of the declared type."
})

/** `POST /v1/uploads`: stores a file of the caller's and answers a signed URL any `url` input accepts (201). */
export const uploadFile = HttpApiEndpoint.post("uploadFile", "/uploads")
  .setPayload(UploadPayload)
  .addSuccess(UploadResponse, { status: 201 })
  .addError(NotFound)
  .addError(PayloadTooLarge)
  .addError(UnsupportedMediaType)
  .annotate(OpenApi.Summary, "Upload a file")
  .annotate(
    OpenApi.Description,
    `Stores the body (up to \`maxUploadBytes\`, ${
      DEFAULT_MAX_UPLOAD_BYTES / 1024 / 1024
    } MiB by default; 413 beyond) for the caller's workspace and answers a signed media URL of this instance, valid until \`expiresAt\`, to give as the value of any \`url\` input. The \`Content-Type\` must name the file's type and the bytes must be of it (415 \`unsupported_media_type\` otherwise); an empty body is a 400. The upload counts against the rate limit like any request, and is deleted by retention once it has expired. 404 when the instance hands out no signed media URLs (its media URLs are public).`
  )

/** Apps: list, detail, workflow graph and starting an execution. */
export class AppsGroup extends HttpApiGroup.make("apps")
  .add(listApps)
  .add(getApp)
  .add(getWorkflow)
  .add(startExecution)
  .middleware(Authentication)
{}

/** Executions: the list, status and outputs, cancel, the delivery of their webhook and its redelivery, live events and logs. */
export class ExecutionsGroup extends HttpApiGroup.make("executions")
  .add(listExecutions)
  .add(getExecution)
  .add(cancelExecution)
  .add(getExecutionWebhook)
  .add(redeliverExecutionWebhook)
  .add(getExecutionEvents)
  .add(getExecutionLogs)
  .middleware(Authentication)
{}

/** Webhooks: the verification key set. */
export class WebhooksGroup extends HttpApiGroup.make("webhooks").add(getSigningKey).middleware(Authentication) {}

/** Uploads: files of the caller's, as inputs. */
export class UploadsGroup extends HttpApiGroup.make("uploads").add(uploadFile).middleware(Authentication) {}

/** The whole API: the endpoints under `/v1`, with the errors every endpoint may answer. */
export class AppexecApi extends HttpApi.make("appexec")
  .add(AppsGroup)
  .add(ExecutionsGroup)
  .add(WebhooksGroup)
  .add(UploadsGroup)
  .addError(BadRequest)
  .addError(Unauthenticated)
  .addError(TooManyRequests)
  .addError(InternalError)
  .prefix("/v1")
  .annotate(OpenApi.Title, "appexec")
  .annotate(OpenApi.Transform, withoutFrameworkErrors)
  .annotate(OpenApi.Version, "1")
  .annotate(
    OpenApi.Description,
    "Asynchronous app execution: list apps, read their parameters, start executions, poll them, and verify signed completion webhooks."
  )
{}
