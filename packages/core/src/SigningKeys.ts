/**
 * Webhook signing keys (SPEC §2.7, §6.3): the current Ed25519 key that signs, and the key set
 * consumers verify against (current key plus keys retired within the grace period).
 */
import { Context, type Effect } from "effect"
import type { StorageError } from "./Errors.js"
import type { Jwk, JwkSet } from "@appexec/api/Jwk"

/** The signing keys of an instance. */
export class SigningKeys extends Context.Tag("@appexec/core/SigningKeys")<
  SigningKeys,
  {
    /** The published key set (`GET /v1/webhooks/signing-key`). */
    readonly keySet: Effect.Effect<JwkSet, StorageError>
    /** Signs `message` with the current key; the signature is hex (SPEC §6.2). */
    readonly sign: (message: Uint8Array) => Effect.Effect<{ readonly kid: string; readonly signature: string }, StorageError>
    /** Makes a new key current; the previous one stays in the key set for the grace period. */
    readonly rotate: Effect.Effect<Jwk, StorageError>
  }
>() {}
