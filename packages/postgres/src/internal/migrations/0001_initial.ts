/**
 * Migration 0001: every table of appexec on PostgreSQL. Times are epoch milliseconds (`bigint`),
 * execution inputs and outputs JSON text (kept byte for byte), delivery attempts `jsonb` (appended
 * in place). Names that are listed in order sort by code point (`COLLATE "C"`), as SQLite and
 * JavaScript do. Partial indexes keep claiming and dispatching proportional to the open work. An
 * execution remembers when its cancel was requested, for the worker that holds it; a start's
 * `Idempotency-Key` is kept per workspace with a digest of its request until it expires.
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `CREATE TABLE workspaces (
    workspace_id TEXT PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
  )`,
  `CREATE TABLE users (
    user_id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (workspace_id),
    name TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (workspace_id, name)
  )`,
  `CREATE TABLE api_keys (
    api_key_id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (workspace_id),
    user_id TEXT NOT NULL REFERENCES users (user_id),
    hash TEXT NOT NULL UNIQUE,
    hint TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
  )`,
  `CREATE INDEX api_keys_hint ON api_keys (hint)`,
  // apps.workflow_id has no foreign key: an app and its first version are written together and
  // refer to each other; workflow_versions.app_id carries the link.
  `CREATE TABLE apps (
    app_id TEXT COLLATE "C" PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL,
    description TEXT,
    search_text TEXT NOT NULL,
    is_public BOOLEAN NOT NULL,
    workspace_id TEXT REFERENCES workspaces (workspace_id),
    workflow_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  )`,
  `CREATE INDEX apps_owner_name ON apps (workspace_id, name)`,
  `CREATE TABLE workflow_versions (
    workflow_id TEXT PRIMARY KEY,
    app_id TEXT NOT NULL REFERENCES apps (app_id),
    definition TEXT NOT NULL,
    created_at BIGINT NOT NULL
  )`,
  `CREATE TABLE executions (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    execution_id TEXT NOT NULL UNIQUE,
    workflow_id TEXT NOT NULL REFERENCES workflow_versions (workflow_id),
    app_id TEXT NOT NULL REFERENCES apps (app_id),
    workspace_id TEXT NOT NULL REFERENCES workspaces (workspace_id),
    user_id TEXT NOT NULL REFERENCES users (user_id),
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    inputs TEXT NOT NULL,
    outputs TEXT NOT NULL,
    error_message TEXT,
    webhook_url TEXT,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    completed_at BIGINT,
    lease_worker TEXT,
    lease_token BIGINT,
    lease_expires_at BIGINT,
    attempts INTEGER NOT NULL DEFAULT 0,
    claims INTEGER NOT NULL DEFAULT 0,
    cancel_requested_at BIGINT
  )`,
  // Claims take workspaces in turn, oldest first within each; the lease end is in the index, so
  // finding a workspace's next claimable execution and counting its live leases read the index.
  `CREATE INDEX executions_open_by_workspace ON executions (workspace_id, seq, lease_expires_at)
    WHERE status IN ('queued', 'running')`,
  `CREATE TABLE idempotency_keys (
    workspace_id TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, key)
  )`,
  `CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at)`,
  `CREATE TABLE webhook_outbox (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id TEXT NOT NULL UNIQUE,
    execution_id TEXT NOT NULL REFERENCES executions (execution_id),
    user_id TEXT NOT NULL,
    url TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    next_attempt_at BIGINT NOT NULL,
    attempts JSONB NOT NULL,
    created_at BIGINT NOT NULL
  )`,
  `CREATE INDEX webhook_outbox_execution ON webhook_outbox (execution_id)`,
  `CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at, created_at, seq) WHERE status = 'pending'`,
  `CREATE TABLE signing_keys (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kid TEXT NOT NULL UNIQUE,
    secret_key TEXT NOT NULL,
    public_key TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    retired_at BIGINT,
    published_until BIGINT
  )`,
  `CREATE TABLE rate_limits (
    key TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    count INTEGER NOT NULL,
    previous INTEGER NOT NULL
  )`,
  `CREATE TABLE blobs (
    key TEXT PRIMARY KEY,
    content_type TEXT NOT NULL,
    bytes BYTEA NOT NULL,
    created_at BIGINT NOT NULL
  )`,
  `CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    value BYTEA NOT NULL,
    created_at BIGINT NOT NULL
  )`
]

/** Creates the tables. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
