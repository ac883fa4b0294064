/**
 * Port (optional): a start whose rate-limit hit is counted by the statement that inserts its
 * execution (docs/storage.md#starts-on-postgresql). A storage that provides it lets a start whose
 * key and app are in this process's caches cost one statement instead of two: the hit, the
 * rate-limit verdict, the check that the key and app revisions are still those the caches were
 * filled under, and the insert, together. Storages without it (SQLite, memory) count the hit
 * first and insert after, as every other request does.
 */
import { Context, type Effect } from "effect"
import type { StorageError } from "./Errors.js"
import type { ExecutionRecord } from "./ExecutionRecord.js"
import type { RateLimitDecision, RateLimitPolicy } from "./RateLimiter.js"
import type { WindowCounts } from "./RateLimitStore.js"

/** The key and app revisions (a number each that every write of keys, or of apps, moves). */
export interface Revisions {
  readonly keys: number
  readonly apps: number
}

/** One counted start: its hit, its execution, and the revisions its key and app were read under. */
export interface CountedStart {
  /** The rate-limit key of the request (its client). */
  readonly key: string
  /** When the request was counted (epoch ms). */
  readonly now: number
  readonly policy: RateLimitPolicy
  readonly record: ExecutionRecord
  readonly revisions: Revisions
}

/** What the statement did: the hit's counts (as `RateLimitStore.hit` answers them), and whether it inserted. */
export interface CountedOutcome {
  readonly counts: WindowCounts
  /**
   * Whether the execution was inserted: only when the hit was allowed (`RateLimiter.decide` on
   * `counts` at `now`) and both revisions were still those of the start.
   */
  readonly inserted: boolean
}

/** Starts counted and inserted in one statement. */
export class CountedStarts extends Context.Tag("@appexec/core/CountedStarts")<
  CountedStarts,
  {
    /**
     * Counts one hit of `start.key` (as `RateLimitStore.hit` at `start.now`, in the window of
     * `start.policy`), and inserts `start.record` only if that hit is allowed and the key and app
     * revisions are still `start.revisions`; one statement for all the starts that come together.
     */
    readonly start: (start: CountedStart) => Effect.Effect<CountedOutcome, StorageError>
  }
>() {}

/**
 * What a request carries into a counted start (`Appexec.executions.startCounted`): its hit, the
 * key revision its principal was taken from the key cache under, and, once the statement ran,
 * the verdict of its hit (none: no statement ran, and the request is counted the usual way).
 */
export interface Counting {
  readonly key: string
  readonly now: number
  readonly policy: RateLimitPolicy
  readonly keyRevision: number
  decision: RateLimitDecision | undefined
}
