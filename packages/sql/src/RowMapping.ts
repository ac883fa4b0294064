/**
 * Rows become domain records at this edge, one way for every dialect. A row was written by this
 * package's stores (or an adapter's statements) from a record the domain schema typed, so it is
 * mapped back, not decoded again: ids keep their brands unchecked and JSON columns are parsed, not
 * validated. Only what a column cannot keep apart itself is checked (a status is any text to
 * SQL), and a workflow version's definition is decoded, since its type is not its JSON.
 *
 * Every mapping runs synchronously and returns an `Either` (itself an `Effect`): reading a row
 * costs no fiber work beyond it.
 */
import { WebhookEvent } from "@appexec/api/Execution"
import { AppStore, Errors, KeyStore, type SigningKeyStore, WebhookOutbox } from "@appexec/core"
import { Either, Schema } from "effect"
import type { Selectable } from "kysely"
import type { AppsTable, WebhookOutboxTable } from "./SqlTables.js"

/** For `make` of a branded id read from a row this package wrote: no check. */
export const trusted = { disableValidation: true } as const

/** Decodes `value` with `schema`; a failure is a `StorageError` of `operation`. */
export const decode = <A, I>(schema: Schema.Schema<A, I>, operation: string) => {
  const decodeEither = Schema.decodeUnknownEither(schema)
  return (value: unknown): Either.Either<A, Errors.StorageError> =>
    Either.mapLeft(
      decodeEither(value),
      (cause) => new Errors.StorageError({ operation: `${operation}: decode row`, cause })
    )
}

/** Parses a JSON column; a failure is a `StorageError` of `operation`. */
export const parseJson = (text: string, operation: string): Either.Either<unknown, Errors.StorageError> =>
  Either.try({
    try: () => JSON.parse(text) as unknown,
    catch: (cause) => new Errors.StorageError({ operation: `${operation}: parse JSON column`, cause })
  })

/** A status column checked against its literals; a stranger is a `StorageError` of `operation`. */
export const status = <S extends string>(schema: Schema.Schema<S>, operation: string) => {
  const is = Schema.is(schema)
  return (text: string): Either.Either<S, Errors.StorageError> =>
    is(text)
      ? Either.right(text)
      : Either.left(
        new Errors.StorageError({ operation: `${operation}: decode row`, cause: `unknown status '${text}'` })
      )
}

const appFields = AppStore.AppRecord.fields
const workspaceId = KeyStore.WorkspaceRecord.fields.workspaceId.make

/** The columns of `apps` an app record reads. */
export const appColumns = [
  "app_id",
  "name",
  "description",
  "is_public",
  "workspace_id",
  "workflow_id",
  "created_at",
  "updated_at"
] as const satisfies ReadonlyArray<keyof AppsTable>

/** A row of `appColumns`. */
export type AppRow = Pick<Selectable<AppsTable>, typeof appColumns[number]>

/** The app a row holds (`is_public` is 0/1 or a boolean, as the dialect stores it). */
export const appOfRow = (row: AppRow): AppStore.AppRecord => ({
  appId: appFields.appId.make(row.app_id, trusted),
  name: row.name,
  description: row.description,
  isPublic: row.is_public === true || row.is_public === 1,
  workspaceId: row.workspace_id === null ? null : workspaceId(row.workspace_id, trusted),
  workflowId: appFields.workflowId.make(row.workflow_id, trusted),
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

const keyFields = KeyStore.ApiKeyRecord.fields

/** The workspace a row (selected with the record's field names) holds. */
export const workspaceOfRow = (
  row: { workspaceId: string; name: string; createdAt: number; maxRunning: number | null; maxPriority: number | null }
): KeyStore.WorkspaceRecord => ({
  workspaceId: keyFields.workspaceId.make(row.workspaceId, trusted),
  name: row.name,
  createdAt: row.createdAt,
  // Left out while unset, as the record says.
  ...(row.maxRunning === null ? {} : { maxRunning: row.maxRunning }),
  ...(row.maxPriority === null ? {} : { maxPriority: row.maxPriority })
})

/** The user a row (selected with the record's field names) holds. */
export const userOfRow = (
  row: { userId: string; workspaceId: string; name: string; createdAt: number }
): KeyStore.UserRecord => ({
  userId: keyFields.userId.make(row.userId, trusted),
  workspaceId: keyFields.workspaceId.make(row.workspaceId, trusted),
  name: row.name,
  createdAt: row.createdAt
})

/** The API key a row (selected with the record's field names) holds. */
export const keyOfRow = (row: {
  apiKeyId: string
  workspaceId: string
  userId: string
  hash: string
  hint: string
  hintTail: string | null
  createdAt: number
  revokedAt: number | null
  lastUsedAt: number | null
}): KeyStore.ApiKeyRecord => ({
  ...row,
  apiKeyId: keyFields.apiKeyId.make(row.apiKeyId, trusted),
  workspaceId: keyFields.workspaceId.make(row.workspaceId, trusted),
  userId: keyFields.userId.make(row.userId, trusted)
})

/** The signing key a row (selected with the record's field names) holds. */
export const signingKeyOfRow = (row: {
  kid: string
  secretKey: string
  publicKey: string
  createdAt: number
  retiredAt: number | null
  publishedUntil: number | null
}): SigningKeyStore.SigningKeyRecord => {
  const { publishedUntil, ...rest } = row
  return publishedUntil === null ? rest : { ...rest, publishedUntil }
}

const outboxFields = WebhookOutbox.OutboxEntry.fields
const outboxStatus = status(outboxFields.status, "read webhook outbox")
const outboxEvent = status(WebhookEvent, "read webhook outbox")

/** The `event` and `body` fields of an outbox row: none for the interface's completion webhook. */
const eventFields = (
  row: Pick<Selectable<WebhookOutboxTable>, "event" | "body">
): Either.Either<Pick<WebhookOutbox.OutboxEntry, "event" | "body">, Errors.StorageError> =>
  row.event === null
    ? Either.right({})
    : Either.map(outboxEvent(row.event), (event) => (row.body === null ? { event } : { event, body: row.body }))

/** The webhook outbox entry a row holds (its attempts JSON text or parsed `jsonb`, as the dialect stores them). */
export const outboxEntryOfRow = (
  row: Selectable<WebhookOutboxTable>
): Either.Either<WebhookOutbox.OutboxEntry, Errors.StorageError> =>
  Either.flatMap(Either.all([outboxStatus(row.status), eventFields(row)]), ([status, event]) =>
    Either.map(
      typeof row.attempts === "string" ? parseJson(row.attempts, "read webhook outbox") : Either.right(row.attempts),
      (attempts) => ({
        ...event,
        deliveryId: outboxFields.deliveryId.make(row.delivery_id, trusted),
        executionId: outboxFields.executionId.make(row.execution_id, trusted),
        userId: outboxFields.userId.make(row.user_id, trusted),
        url: row.url,
        status,
        nextAttemptAt: row.next_attempt_at,
        // Written as JSON of `DeliveryAttempt`s (see above).
        attempts: attempts as WebhookOutbox.OutboxEntry["attempts"],
        createdAt: row.created_at,
        ...(row.trace_parent === null ? {} : { traceParent: row.trace_parent }),
        ...(row.redelivery === true || row.redelivery === 1 ? { redelivery: true as const } : {})
      })
    ))
