/**
 * A start whose rate-limit hit is counted by the statement that inserts its execution
 * (docs/storage.md#starts-on-postgresql): a start without an idempotency key, whose key is in the
 * key cache, on a storage that counts starts (`Appexec.executions.startCounted`). It runs with its
 * hit; when no statement ran (the start was refused before it, or its app is not cached) the
 * request goes the usual way, hit first, so a flood of bad requests is still answered 429 before
 * anything else; when the hit was counted but the key or app changed meanwhile, the key is checked
 * again and the start made the usual way, without a second hit.
 */
import type { Authentication } from "@appexec/api"
import type { CountedStarts, Errors, RateLimiter } from "@appexec/core"
import { Effect, Either } from "effect"
import * as RateLimit from "../RateLimit.js"
import type { NotInserted, Served } from "./EndpointBinding.js"
import { readOnce, type ServerRequest, type ServerResponse } from "./Exchange.js"
import type * as Routes from "./Routes.js"

/**
 * An answer, the route it went to (an endpoint's path template, or the path itself), and the
 * `RateLimit-*` headers it gets.
 */
export type Routed = readonly [ServerResponse, string, Readonly<Record<string, string>>?]

/** What a counted start is made of: the HTTP app's own steps. */
export interface Steps {
  readonly served: ReadonlyMap<string, Served>
  readonly policy: RateLimiter.RateLimitPolicy
  readonly hops: number
  /** Runs an endpoint for an authenticated caller; every failure becomes its answer, but `NotInserted`. */
  readonly runEndpoint: (
    endpoint: Served,
    input: Parameters<Served["run"]>[0],
    requestId: string
  ) => Effect.Effect<ServerResponse, NotInserted>
  /** A request after the rate limit let it through: its key checked, its endpoint run. */
  readonly api: (
    request: ServerRequest,
    path: string,
    search: string,
    requestId: string,
    found: Routes.Match
  ) => Effect.Effect<Routed, Errors.StorageError>
  /** A request the usual way: its hit counted first (`found`: its route, matched already). */
  readonly hitFirst: (
    request: ServerRequest,
    path: string,
    search: string,
    requestId: string,
    now: number,
    found: Routes.Match
  ) => Effect.Effect<Routed, Errors.StorageError>
  /** 429 for a refused hit. */
  readonly refused: (decision: RateLimiter.RateLimitDecision, path: string) => Routed
}

/** One counted start: the request, its matched route and its principal as the key cache holds it. */
export interface Start {
  readonly request: ServerRequest
  readonly path: string
  readonly search: string
  readonly query: Parameters<Served["run"]>[0]["query"]
  readonly requestId: string
  /** When its hit is counted. */
  readonly now: number
  readonly found: Extract<Routes.Match, { _tag: "Found" }>
  readonly cached: { readonly principal: Authentication.Principal; readonly revision: number }
}

/** Counted starts over the app's `steps`. */
export const make = (steps: Steps) => (start: Start): Effect.Effect<Routed, Errors.StorageError> => {
  const { cached, found, now, path, query, requestId, search } = start
  // Read once, whichever way the request goes.
  const request = readOnce(start.request)
  const counting: CountedStarts.Counting = {
    key: RateLimit.clientIp(request, steps.hops),
    now,
    policy: steps.policy,
    keyRevision: cached.revision,
    decision: undefined
  }
  // The endpoint's answer, or that the start inserted nothing.
  const run = Effect.either(steps.runEndpoint(
    steps.served.get(found.route.name)!,
    { params: found.params, query, principal: cached.principal, request, requestId, counting },
    requestId
  ))
  return Effect.flatMap(run, (outcome): Effect.Effect<Routed, Errors.StorageError> => {
    const decision = counting.decision
    if (decision === undefined) return steps.hitFirst(request, path, search, requestId, now, found)
    if (!decision.allowed) return Effect.succeed(steps.refused(decision, path))
    const headers = RateLimit.headersOf(decision)
    if (Either.isRight(outcome)) return Effect.succeed([outcome.right, found.route.template, headers])
    return Effect.map(steps.api(request, path, search, requestId, found), ([answer, route]) => [answer, route, headers])
  })
}
