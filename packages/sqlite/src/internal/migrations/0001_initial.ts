/**
 * Migration 0001: every table of appexec. Times are epoch milliseconds, structured values JSON
 * text, booleans 0/1. Rows refer to their owners by foreign key (checked: `foreign_keys = ON`).
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `CREATE TABLE workspaces (
    workspace_id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
  ) STRICT`,
  `CREATE TABLE users (
    user_id TEXT PRIMARY KEY NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (workspace_id),
    name TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (workspace_id, name)
  ) STRICT`,
  `CREATE TABLE api_keys (
    api_key_id TEXT PRIMARY KEY NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (workspace_id),
    user_id TEXT NOT NULL REFERENCES users (user_id),
    hash TEXT NOT NULL UNIQUE,
    hint TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
  ) STRICT`,
  `CREATE INDEX api_keys_hint ON api_keys (hint)`,
  // apps.workflow_id has no foreign key: an app and its first version are written together and
  // refer to each other; workflow_versions.app_id carries the link.
  `CREATE TABLE apps (
    app_id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    is_public INTEGER NOT NULL CHECK (is_public IN (0, 1)),
    workspace_id TEXT REFERENCES workspaces (workspace_id),
    workflow_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) STRICT`,
  `CREATE INDEX apps_owner_name ON apps (workspace_id, name)`,
  `CREATE TABLE workflow_versions (
    workflow_id TEXT PRIMARY KEY NOT NULL,
    app_id TEXT NOT NULL REFERENCES apps (app_id),
    definition TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) STRICT`,
  `CREATE TABLE executions (
    seq INTEGER PRIMARY KEY,
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
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    completed_at INTEGER,
    lease_worker TEXT,
    lease_token INTEGER,
    lease_expires_at INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    claims INTEGER NOT NULL DEFAULT 0
  ) STRICT`,
  `CREATE TABLE webhook_outbox (
    seq INTEGER PRIMARY KEY,
    delivery_id TEXT NOT NULL UNIQUE,
    execution_id TEXT NOT NULL REFERENCES executions (execution_id),
    user_id TEXT NOT NULL,
    url TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    next_attempt_at INTEGER NOT NULL,
    attempts TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) STRICT`,
  `CREATE INDEX webhook_outbox_execution ON webhook_outbox (execution_id)`,
  `CREATE TABLE signing_keys (
    seq INTEGER PRIMARY KEY,
    kid TEXT NOT NULL UNIQUE,
    secret_key TEXT NOT NULL,
    public_key TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    retired_at INTEGER
  ) STRICT`,
  `CREATE TABLE rate_limits (
    key TEXT PRIMARY KEY NOT NULL,
    window_start INTEGER NOT NULL,
    count INTEGER NOT NULL
  ) STRICT, WITHOUT ROWID`,
  `CREATE TABLE blobs (
    key TEXT PRIMARY KEY NOT NULL,
    content_type TEXT NOT NULL,
    bytes BLOB NOT NULL,
    created_at INTEGER NOT NULL
  ) STRICT`
]

/** Creates the tables. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
