/**
 * The tables of appexec's SQL schema, as kysely sees them, for every dialect: snake_case columns,
 * times as epoch milliseconds (SQLite `INTEGER`, PostgreSQL `bigint` read back as numbers), JSON
 * text for execution inputs and outputs. Where the dialects store a value differently the column
 * type says both (`SqlBool`: 0/1 on SQLite, `boolean` on PostgreSQL; delivery attempts: JSON text
 * on SQLite, `jsonb` on PostgreSQL), and the few columns and tables one dialect alone has say so.
 */
import type { ColumnType, Generated, SqlBool } from "kysely"

/** `apps`: one row per app, pointing at its current workflow version. */
export interface AppsTable {
  app_id: string
  name: string
  description: string | null
  /**
   * PostgreSQL only: `name` and `description` folded with `toLowerCase` (all of Unicode), for
   * search (`SqlDialect.search`); SQLite folds them in the query instead.
   */
  search_text: ColumnType<string, string | undefined, string>
  /** 0/1 on SQLite, `boolean` on PostgreSQL: written through `SqlDialect.bool`. */
  is_public: SqlBool
  workspace_id: string | null
  workflow_id: string
  created_at: number
  updated_at: number
}

/** `workflow_versions`: immutable app definitions. */
export interface WorkflowVersionsTable {
  workflow_id: string
  app_id: string
  definition: string
  created_at: number
}

/** `workspaces`. */
export interface WorkspacesTable {
  workspace_id: string
  name: string
  created_at: number
  /** Most executions of the workspace under live leases; null: the instance's default. */
  max_running: ColumnType<number | null, number | null | undefined, number | null>
  /** Highest priority its keys may ask for at a start; null: the instance's default. */
  max_priority: ColumnType<number | null, number | null | undefined, number | null>
}

/** `users`. */
export interface UsersTable {
  user_id: string
  workspace_id: string
  name: string
  created_at: number
}

/** `api_keys`: hashes only. */
export interface ApiKeysTable {
  api_key_id: string
  workspace_id: string
  user_id: string
  hash: string
  hint: string
  /** The key's last 4 characters (migration 0012 on SQLite, 0014 on PostgreSQL); null for an older key not used since. */
  hint_tail: string | null
  created_at: number
  revoked_at: number | null
  last_used_at: number | null
}

/** `executions`: the execution record and its queue state (lease, attempts). */
export interface ExecutionsTable {
  /** Acceptance order; the queue is FIFO on it. */
  seq: Generated<number>
  execution_id: string
  workflow_id: string
  app_id: string
  workspace_id: string
  user_id: string
  status: string
  inputs: string
  outputs: string
  error_message: string | null
  webhook_url: string | null
  created_at: number
  started_at: number | null
  completed_at: number | null
  lease_worker: string | null
  lease_token: number | null
  lease_expires_at: number | null
  /** Claims not given back (`release`): what `maxAttempts` bounds (`Lease.counted`). */
  attempts: Generated<number>
  /** Every claim: the lease token's source, and the execution's `attempt` (`Lease.attempt`). */
  claims: Generated<number>
  /** When a cancel was requested for the worker that holds the execution. */
  cancel_requested_at: number | null
  /** The W3C `traceparent` of the request that started it, when traced. */
  trace_parent: string | null
  /**
   * The events its webhook receives (`ExecutionRecord.webhookEvents`), comma-separated in their
   * order (`start,output,completed`); null when the start gave none (the completion webhook alone).
   */
  webhook_events: ColumnType<string | null, string | null | undefined, string | null>
  /** The start's priority (`ExecutionRecord.priority`), 0 when it gave none. */
  priority: ColumnType<number, number | undefined, number>
  /**
   * What claims order a workspace's queue by: `created_at` less a minute per step of priority
   * (`ExecutionRecord.queueAtOf`), then `seq`.
   */
  queue_at: number
}

/** `idempotency_keys`: a workspace's start keys, with a digest of their request. */
export interface IdempotencyKeysTable {
  workspace_id: string
  key: string
  fingerprint: string
  execution_id: string
  expires_at: number
}

/** One recorded delivery attempt, as stored in `webhook_outbox.attempts`. */
export interface AttemptColumn {
  readonly at: number
  readonly statusCode: number | null
  readonly error: string | null
}

/** `webhook_outbox`: webhooks to deliver, one row per event sent (docs/webhooks.md#events). */
export interface WebhookOutboxTable {
  seq: Generated<number>
  delivery_id: string
  execution_id: string
  user_id: string
  url: string
  status: string
  next_attempt_at: number
  /** JSON text on SQLite, `jsonb` (read back parsed) on PostgreSQL; written as JSON text on both. */
  attempts: ColumnType<string | ReadonlyArray<AttemptColumn>, string, string>
  created_at: number
  /** The W3C `traceparent` its attempts continue, when traced. */
  trace_parent: string | null
  /**
   * Whether the delivery was armed again for one attempt (`OutboxEntry.redelivery`): 0/1 on
   * SQLite, `boolean` on PostgreSQL, false when inserted.
   */
  redelivery: ColumnType<SqlBool, SqlBool | undefined, SqlBool>
  /** The event it delivers (`OutboxEntry.event`); null on the interface's completion webhook. */
  event: ColumnType<string | null, string | null | undefined, string | null>
  /** The body of a `start`, `output` or `logs` event (`OutboxEntry.body`); null on completion webhooks. */
  body: ColumnType<string | null, string | null | undefined, string | null>
}

/**
 * `execution_reports`: what running executions report (`ExecutionReports`), keyed by execution
 * and event id: each node's newest progress (one row per execution and node, replaced by the
 * next), the kept log lines, and the newest live preview (one row per execution, a progress row
 * of node `preview:<node id>`, its media type in `level` and its URL in `message`).
 */
export interface ExecutionReportsTable {
  execution_id: string
  /** The event id (`ExecutionReports.eventId`), unique within the execution. */
  id: number
  /** `progress` or `log`. */
  kind: string
  /** Null on log lines appexec writes itself. */
  node_id: string | null
  /** Log lines: `info`, `warn` or `error`; a preview: the image's media type. */
  level: string | null
  /** Progress only. */
  fraction: number | null
  /** Never null on a log line; a preview's URL. */
  message: string | null
  /** `message.length` (UTF-16 code units, as `LOG_BYTES` counts them); 0 on progress. */
  message_length: number
  at: number
}

/**
 * `execution_logs`: per execution with a log, what bounds it (`lines` and `bytes` kept, so that
 * an append can tell without reading the log whether anything must be dropped) and what was
 * dropped (`dropped` lines, the newest of them `dropped_through`, 0 while none was).
 */
export interface ExecutionLogsTable {
  execution_id: string
  lines: number
  bytes: number
  dropped: number
  dropped_through: number
}

/** `signing_keys`. */
export interface SigningKeysTable {
  seq: Generated<number>
  kid: string
  secret_key: string
  public_key: string
  created_at: number
  retired_at: number | null
  published_until: number | null
}

/** `rate_limits`: per key, the counter of its current window and the count of the window before. */
export interface RateLimitsTable {
  key: string
  window_start: number
  count: number
  previous: number
}

/** `key_revision`: one row, bumped by triggers on every change of `api_keys`. */
export interface KeyRevisionTable {
  id: number
  revision: number
}

/** `app_revision` (PostgreSQL only): one row, bumped by a trigger on every write of `apps`. */
export interface AppRevisionTable {
  id: number
  revision: number
}

/** `blobs`: media bytes. */
export interface BlobsTable {
  key: string
  content_type: string
  bytes: Uint8Array
  created_at: number
}

/** `media_stores`: the stores besides the default one that media were kept in (`MediaStoreRegistry`). */
export interface MediaStoresTable {
  id: string
  uri: string
  endpoint: string | null
  region: string
  added_at: number
}

/** `processes`: each process of the deployment while it runs (`ProcessRegistry`). */
export interface ProcessesTable {
  process_id: string
  name: string
  role: string
  version: string
  started_at: number
  heartbeat_at: number
  expires_at: number
  /** The node types its worker runs, as a JSON array; null: it runs no worker. */
  node_types: ColumnType<string | null, string | null | undefined, string | null>
}

/** `secrets` (PostgreSQL only): random secrets every process of a deployment shares (the media URL key). */
export interface SecretsTable {
  name: string
  value: Uint8Array
  created_at: number
}

/**
 * `operator_secrets`: the secrets an operator manages, sealed (`SealedSecretStore`);
 * `workspace_id` is '' for the instance's.
 */
export interface OperatorSecretsTable {
  name: string
  workspace_id: string
  sealed: string
  updated_at: number
}

/** The whole schema at the latest migration of either dialect. */
export interface Tables {
  apps: AppsTable
  workflow_versions: WorkflowVersionsTable
  workspaces: WorkspacesTable
  users: UsersTable
  api_keys: ApiKeysTable
  executions: ExecutionsTable
  idempotency_keys: IdempotencyKeysTable
  webhook_outbox: WebhookOutboxTable
  execution_reports: ExecutionReportsTable
  execution_logs: ExecutionLogsTable
  signing_keys: SigningKeysTable
  rate_limits: RateLimitsTable
  key_revision: KeyRevisionTable
  app_revision: AppRevisionTable
  blobs: BlobsTable
  media_stores: MediaStoresTable
  processes: ProcessesTable
  secrets: SecretsTable
  operator_secrets: OperatorSecretsTable
}
