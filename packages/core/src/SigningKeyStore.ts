/**
 * Port: the Ed25519 keys that sign webhooks.
 */
import { Context, type Effect, Schema } from "effect"
import type { StorageError } from "./Errors.js"

/**
 * A signing key. The newest unretired key signs; a retired key stays published until
 * `publishedUntil`, or when that is absent until `retiredAt` + the publisher's grace period.
 */
export const SigningKeyRecord = Schema.Struct({
  /** RFC 7638 thumbprint of the public key. */
  kid: Schema.String,
  /**
   * The Ed25519 seed (32 bytes) sealed with the instance's master key (`SecretSealing`), or in
   * hex for a key stored without one. A store keeps it as it is given.
   */
  secretKey: Schema.String,
  /** Hex Ed25519 public key (32 bytes). */
  publicKey: Schema.String,
  createdAt: Schema.Number,
  retiredAt: Schema.NullOr(Schema.Number),
  /** When a retired key leaves the published key set, fixed by the rotation that retired it. */
  publishedUntil: Schema.optional(Schema.Number)
})
export type SigningKeyRecord = typeof SigningKeyRecord.Type

/** Storage of signing keys. */
export class SigningKeyStore extends Context.Tag("@appexec/core/SigningKeyStore")<
  SigningKeyStore,
  {
    /** Every key, oldest first. */
    readonly list: Effect.Effect<ReadonlyArray<SigningKeyRecord>, StorageError>
    /** Inserts a key unless one with its `kid` exists. */
    readonly insert: (key: SigningKeyRecord) => Effect.Effect<void, StorageError>
    /** Replaces the stored `secretKey` of the key `kid` (sealing it, sealing it again); nothing when there is no such key. */
    readonly replaceSecret: (kid: string, secretKey: string) => Effect.Effect<void, StorageError>
    /** Marks every unretired key other than `keep` as retired at `at`, published until `publishedUntil` when given. */
    readonly retireAllBut: (keep: string, at: number, publishedUntil?: number) => Effect.Effect<void, StorageError>
  }
>() {}
