/**
 * The API's resources as the console reads them: the wire forms of `@appexec/api` (types only,
 * nothing of it is bundled). An older server may leave out what the extensions add (`appId` and
 * `inputs` of an execution, which the schema has as optional) or not have the execution list.
 */
import type { App, Execution, Live, Upload } from "@appexec/api"

/** An item of the app list. */
export type AppSummary = typeof App.AppSummary.Encoded
/** An app with its parameters. */
export type AppDetail = typeof App.AppDetail.Encoded
/** One parameter of an app. */
export type Parameter = typeof App.Parameter.Encoded
/** The workflow graph of an app. */
export type WorkflowGraph = typeof App.WorkflowGraph.Encoded
/** The start answer. */
export type StartedExecution = typeof Execution.StartedExecution.Encoded
/** One output of an execution. */
export type Output = typeof Execution.Output.Encoded
/** The delivery of an execution's webhook. */
export type WebhookDelivery = typeof Execution.WebhookDelivery.Encoded
/** The delivery of one event of an execution's webhook. */
export type EventDelivery = typeof Execution.EventDelivery.Encoded
/** An event a webhook may receive. */
export type WebhookEvent = typeof Execution.WebhookEvent.Encoded
/** A stored upload: its signed URL, type, size and expiry. */
export type Uploaded = typeof Upload.Upload.Encoded
/** A log line. */
export type LogLine = typeof Live.LogLine.Encoded
/** How far a node is. */
export type Progress = typeof Live.Progress.Encoded
/** A running execution's newest live preview image. */
export type Preview = typeof Live.Preview.Encoded
/** An execution's status. */
export type ExecutionStatus = typeof Execution.ExecutionStatus.Encoded

/** An execution; `appId` and `inputs` are there on a server that has the execution list. */
export type ExecutionView = typeof Execution.Execution.Encoded

/** A page of the execution list. */
export type ExecutionPage = typeof Execution.ExecutionPage.Encoded

/** The statuses, in the order an execution goes through them. */
export const statuses: ReadonlyArray<ExecutionStatus> = ["queued", "running", "completed", "failed"]

/** Whether an execution is over: `completed` or `failed`. */
export const isFinished = (status: ExecutionStatus): boolean => status === "completed" || status === "failed"
