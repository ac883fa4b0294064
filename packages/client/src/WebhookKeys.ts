/**
 * Webhook verification for receivers (docs/api.md#signature) with a cached key set (docs/api.md#get-the-webhook-signing-key: "clients
 * cache it"). The set is fetched on first use and kept. A webhook signed by a key the cached set
 * does not hold (the service rotated its key) makes the cache fetch the set again, once, and
 * verify again; at most one such refetch happens per `minRefetchIntervalMs`, so forged webhooks
 * cannot turn into a stream of key requests. Signatures are checked by core's `verifyWebhook`.
 */
import * as Envelope from "@appexec/api/Envelope"
import * as Execution from "@appexec/api/Execution"
import type * as Jwk from "@appexec/api/Jwk"
import * as WebhookVerifier from "@appexec/core/WebhookVerifier"
import { Clock, Effect, Either, Option, Schema, SynchronizedRef } from "effect"
import { WebhookPayloadError } from "./ClientError.js"

/** Options of the cache and of every verification. */
export interface KeyCacheOptions {
  /** Largest accepted distance between the webhook's timestamp and now, in seconds (default 300). */
  readonly toleranceSeconds?: number
  /** Brand word of the header names (default `Service`). */
  readonly brand?: string
  /** Least time between two fetches caused by a signature the cached set cannot verify (default 10 000 ms). */
  readonly minRefetchIntervalMs?: number
}

/** A verified webhook: the facts of its headers and its decoded body, the execution. */
export interface VerifiedDelivery extends WebhookVerifier.VerifiedWebhook {
  /** The execution as the body carries it, in a terminal state. */
  readonly execution: Execution.Execution
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
    headers: WebhookVerifier.HeadersLike
  ) => Effect.Effect<VerifiedDelivery, WebhookVerifier.WebhookVerificationError | WebhookPayloadError | E>
}

/**
 * Core's verification of one webhook against a key set you hold (synchronous, never throws),
 * re-exported: `verifyWebhook(rawBody, headers, keySet)` is `Either<VerifiedWebhook, WebhookVerificationError>`.
 */
export const verifyWebhook = WebhookVerifier.verifyWebhook

/** The webhook body (docs/api.md#webhooks): the polling response, `{ data: Execution }`. */
export const WebhookBody = Envelope.Envelope(Execution.Execution)

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

    const verify: KeyCache<E>["verify"] = (rawBody, headers) =>
      Effect.gen(function*() {
        const keys = yield* keySet
        const first = yield* Effect.either(WebhookVerifier.verify(rawBody, headers, keys, verifyOptions))
        let verified: WebhookVerifier.VerifiedWebhook
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
          verified = yield* WebhookVerifier.verify(rawBody, headers, newer.value, verifyOptions)
        }
        const text = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody)
        const body = yield* decodeBody(text).pipe(
          Effect.mapError((e) =>
            new WebhookPayloadError({ message: `The webhook body is not an execution: ${e.message}` })
          )
        )
        return { ...verified, execution: body.data }
      })

    return { keySet, refresh, verify }
  })
