/**
 * Port: the processes of a deployment (docs/operations.md#the-fleet): every `serve`, `worker`
 * and embedded instance on one storage writes a row of itself when it starts, beats on it on the
 * lease-renewal schedule, and deletes it as it stops, so that the operator views list every
 * live process, idle ones too. A process that died leaves its row: it is taken for dead once its
 * `expiresAt` (its last beat plus its lease) has passed, and the row is pruned later.
 */
import { Context, type Effect, Schema } from "effect"
import type { StorageError } from "./Errors.js"

/** What a process runs: `serve` (API and work), `api` (`serve --no-worker`), `worker`, or `embedded` (a host program). */
export const Role = Schema.Literal("serve", "api", "worker", "embedded")

/** The role of a process. */
export type Role = typeof Role.Type

/** A process as its row holds it. */
export class ProcessEntry extends Schema.Class<ProcessEntry>("ProcessEntry")({
  /** Unique across restarts: the identity and a short random suffix (`host:pid#1a2b3c`); its lease owner id. */
  processId: Schema.String,
  /** The identity an operator reads: `host:pid`, or the name it was given (`--name`). */
  name: Schema.String,
  role: Role,
  /** The appexec version it runs. */
  version: Schema.String,
  /** When it started (epoch ms). */
  startedAt: Schema.Number,
  /** Its last beat (epoch ms). */
  heartbeatAt: Schema.Number,
  /** Its last beat plus its lease (epoch ms): past it, the process is taken for dead. */
  expiresAt: Schema.Number,
  /** The node types its worker runs (`Routing.runnable`); absent or null: it runs no worker. */
  nodeTypes: Schema.optional(Schema.NullOr(Schema.Array(Schema.String)))
}) {}

/** Whether `entry` still beat within its lease at `now`. */
export const isLive = (entry: ProcessEntry, now: number): boolean => entry.expiresAt > now

/** The record of a deployment's processes. */
export class ProcessRegistry extends Context.Tag("@appexec/core/ProcessRegistry")<
  ProcessRegistry,
  {
    /**
     * Writes `entry` under its `processId`: a new row, or the same row's `heartbeatAt` and
     * `expiresAt` (its name, role, version and start stay those of its first write).
     */
    readonly beat: (entry: ProcessEntry) => Effect.Effect<void, StorageError>
    /** Deletes the row of `processId`; whether there was one. */
    readonly remove: (processId: string) => Effect.Effect<boolean, StorageError>
    /** Every row, live or not, by name, then by start, then by process id. */
    readonly list: Effect.Effect<ReadonlyArray<ProcessEntry>, StorageError>
    /** Deletes the rows whose `expiresAt` is before `before` (epoch ms); how many. */
    readonly prune: (before: number) => Effect.Effect<number, StorageError>
  }
>() {}
