/**
 * The webhook verification key set of docs/api.md#jwk.
 */
import { Schema } from "effect"

/** An Ed25519 public key in JWK form (docs/api.md#jwk). */
export const Jwk = Schema.Struct({
  kty: Schema.Literal("OKP"),
  crv: Schema.Literal("Ed25519"),
  x: Schema.String,
  kid: Schema.String,
  use: Schema.Literal("sig"),
  alg: Schema.Literal("EdDSA"),
  /**
   * An extension (docs/webhooks.md#standard-webhooks): the same public key as the Standard
   * Webhooks specification writes it, `whpk_` and the base64 of its 32 raw bytes. appexec always
   * sends it; optional so that key sets without it still decode.
   */
  whpk: Schema.optional(
    Schema.String.annotations({
      description:
        "The same key as Standard Webhooks writes it: `whpk_` and the base64 of its 32 raw bytes; verifies the `webhook-signature` header."
    })
  )
})
export type Jwk = typeof Jwk.Type

/** The signing-key response: a top-level `keys` array, not wrapped in `data` (docs/api.md#resources, §4.6). */
export const JwkSet = Schema.Struct({
  keys: Schema.Array(Jwk)
})
export type JwkSet = typeof JwkSet.Type
