/**
 * Webhook verification for receivers (docs/api.md#signature) with a cached key set (docs/api.md#get-the-webhook-signing-key: "clients
 * cache it"). The set is fetched on first use and kept. A webhook signed by a key the cached set
 * does not hold (the service rotated its key) makes the cache fetch the set again, once, and
 * verify again; at most one such refetch happens per `minRefetchIntervalMs`, so forged webhooks
 * cannot turn into a stream of key requests. Either signature of a webhook verifies it (`scheme`):
 * the service's own headers (`X-Service-Webhook-Signature`, core's `verifyWebhook`), or Standard
 * Webhooks' `webhook-signature: v1a,…` (core's `verifyStandardWebhook`), both runtime-neutral.
 */
import type * as Execution from "@appexec/api/Execution"
import type * as Jwk from "@appexec/api/Jwk"
import type * as Live from "@appexec/api/Live"
import * as Webhook from "@appexec/api/Webhook"
import * as WebhookVerifier from "@appexec/core/WebhookVerifier"
import { Clock, Effect, Either, Option, Schema, SynchronizedRef } from "effect"
import { WebhookPayloadError } from "./ClientError.js"

/**
 * Which signature of a webhook to verify: `service`, the service's own headers
 * (`X-Service-Webhook-Signature` over `timestamp.body`, named with the brand word); `standard`,
 * Standard Webhooks' `webhook-id`, `webhook-timestamp` and `webhook-signature: v1a,…` over
 * `id.timestamp.body`. appexec sends both on every webhook, signed with the same key.
 */
export type Scheme = "service" | "standard"

/** Options of the cache and of every verification. */
export interface KeyCacheOptions {
  /** Largest accepted distance between the webhook's timestamp and now, in seconds (default 300). */
  readonly toleranceSeconds?: number
  /** Brand word of the header names (default `Service`). */
  readonly brand?: string
  /** Least time between two fetches caused by a signature the cached set cannot verify (default 10 000 ms). */
  readonly minRefetchIntervalMs?: number
  /** The signature verified when a call does not say (default `service`). */
  readonly scheme?: Scheme
}

/** Options of one verification. */
export interface VerifyOptions {
  /** The signature to verify (default: the cache's `scheme`). */
  readonly scheme?: Scheme
}

/** A verified webhook: the facts of its headers and its decoded body. */
export interface VerifiedDelivery extends WebhookVerifier.VerifiedWebhook {
  /** The signature that verified it. */
  readonly scheme: Scheme
  /**
   * The message id (`webhook-id`): the same on every attempt of one event, another for every
   * event; the key to de-duplicate deliveries. Null when the request has none.
   */
  readonly webhookId: string | null
  /** Which event it is (docs/webhooks.md#events): the body's `type`, `completed` when it has none. */
  readonly event: Execution.WebhookEvent
  /** The execution as the body carries it: in a terminal state for `completed`, as it was at the event otherwise. */
  readonly execution: Execution.Execution
  /** A `logs` event's lines, logged since the previous `logs` event. */
  readonly logs?: ReadonlyArray<Live.LogLine>
}

/** The key-set cache of one client. */
export interface KeyCache<E> {
  /** The cached key set, fetched on first use. */
  readonly keySet: Effect.Effect<Jwk.JwkSet, E>
  /** Fetches the key set now and caches it. */
  readonly refresh: Effect.Effect<Jwk.JwkSet, E>
  /**
   * Verifies a webhook from its raw body (the bytes received, unparsed) and its headers, then
   * decodes the body. Fails with `WebhookVerificationError` (answer 401, ignore the body).
   */
  readonly verify: (
    rawBody: Uint8Array | string,
    headers: WebhookVerifier.HeadersLike,
    options?: VerifyOptions
  ) => Effect.Effect<VerifiedDelivery, WebhookVerifier.WebhookVerificationError | WebhookPayloadError | E>
}

/**
 * Core's verification of one webhook against a key set you hold (synchronous, never throws),
 * re-exported: `verifyWebhook(rawBody, headers, keySet)` is `Either<VerifiedWebhook, WebhookVerificationError>`.
 */
export const verifyWebhook = WebhookVerifier.verifyWebhook

/**
 * Core's Standard Webhooks verification (synchronous, never throws), re-exported:
 * `verifyStandardWebhook(rawBody, headers, keys)` checks the `v1a` signature of `webhook-signature`
 * against a key set as published or `whpk_…` keys.
 */
export const verifyStandardWebhook = WebhookVerifier.verifyStandardWebhook

/** The webhook body (docs/webhooks.md): the polling response `{ data: Execution }`, with an event's `type`. */
export const WebhookBody = Webhook.WebhookBody

const decodeBody = Schema.decodeUnknown(Schema.parseJson(WebhookBody))

/** Rejections a newer key set may cure: no key of the set matched, or none verified. */
const mayBeRotation = (error: WebhookVerifier.WebhookVerificationError): boolean =>
  error.reason === "no_matching_key" || error.reason === "bad_signature"

interface Cached {
  readonly keys: Jwk.JwkSet
  readonly fetchedAt: number
}

/** A cache over `fetchKeys` (the signing-key endpoint). */
export const make = <E>(
  fetchKeys: Effect.Effect<Jwk.JwkSet, E>,
  options: KeyCacheOptions = {}
): Effect.Effect<KeyCache<E>> =>
  Effect.gen(function*() {
    const state = yield* SynchronizedRef.make<Option.Option<Cached>>(Option.none())
    const minInterval = options.minRefetchIntervalMs ?? 10_000
    const defaultScheme = options.scheme ?? "service"
    const verifyOptions = {
      toleranceSeconds: options.toleranceSeconds ?? 300,
      ...(options.brand === undefined ? {} : { brand: options.brand })
    }

    const fetched = Effect.flatMap(fetchKeys, (keys) =>
      Effect.map(Clock.currentTimeMillis, (fetchedAt) => ({ keys, fetchedAt })))

    const keySet = SynchronizedRef.modifyEffect(state, (cached) =>
      Option.match(cached, {
        onSome: (c) =>
          Effect.succeed([c.keys, cached] as const),
        onNone: () => Effect.map(fetched, (c) => [c.keys, Option.some(c)] as const)
      }))

    const refresh = SynchronizedRef.modifyEffect(state, () =>
      Effect.map(fetched, (c) =>
        [c.keys, Option.some(c)] as const))

    /**
     * A newer set than `seen`, or `none` when none may be fetched yet. Concurrent callers share
     * one fetch: whoever comes second finds the set already replaced and takes it.
     */
    const refetchAfter = (seen: Jwk.JwkSet) =>
      SynchronizedRef.modifyEffect(state, (cached) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          if (Option.isSome(cached) && cached.value.keys !== seen) {
            return [Option.some(cached.value.keys), cached] as const
          }
          if (Option.isSome(cached) && now - cached.value.fetchedAt < minInterval) {
            return [Option.none(), cached] as const
          }
          const next = yield* fetched
          return [Option.some(next.keys), Option.some(next)] as const
        }))

    /** The facts of a webhook verified against `keys` in `scheme` (the execution id is the body's for `standard`). */
    const check = (
      rawBody: Uint8Array | string,
      headers: WebhookVerifier.HeadersLike,
      keys: Jwk.JwkSet,
      scheme: Scheme
    ) =>
      scheme === "service"
        ? Effect.map(
          WebhookVerifier.verify(rawBody, headers, keys, verifyOptions),
          (verified) => ({ ...verified, webhookId: WebhookVerifier.headerValue(headers, "webhook-id") ?? null })
        )
        : Effect.map(
          WebhookVerifier.verifyStandard(rawBody, headers, keys, verifyOptions),
          (verified) => ({ requestId: null, userId: null, ...verified })
        )

    const verify: KeyCache<E>["verify"] = (rawBody, headers, options = {}) =>
      Effect.gen(function*() {
        const scheme = options.scheme ?? defaultScheme
        const keys = yield* keySet
        const first = yield* Effect.either(check(rawBody, headers, keys, scheme))
        let verified: Effect.Effect.Success<ReturnType<typeof check>>
        if (Either.isRight(first)) {
          verified = first.right
        } else {
          if (!mayBeRotation(first.left)) {
            return yield* first.left
          }
          const newer = yield* refetchAfter(keys)
          if (Option.isNone(newer)) {
            return yield* first.left
          }
          verified = yield* check(rawBody, headers, newer.value, scheme)
        }
        const text = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody)
        const body = yield* decodeBody(text).pipe(
          Effect.mapError((e) =>
            new WebhookPayloadError({ message: `The webhook body is not an execution: ${e.message}` })
          )
        )
        return {
          ...verified,
          // Signed in the body: the execution id a Standard Webhooks check has no header for.
          requestId: verified.requestId ?? body.data.executionId,
          scheme,
          event: Webhook.eventOf(body),
          execution: body.data,
          ...(body.logs === undefined ? {} : { logs: body.logs })
        }
      })

    return { keySet, refresh, verify }
  })
