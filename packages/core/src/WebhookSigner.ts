/**
 * Port: what computes the Ed25519 signatures of webhooks (`SigningKeys.signAll` hands it the
 * messages of one attempt — the interface's and the Standard Webhooks one — and the seed of the
 * key that signs, in one call). The default, `inThread`, signs with
 * `@noble/ed25519` on the calling thread, the secret key expanded once per key; a host may
 * provide another implementation, such as the worker-thread pool of `@appexec/platform-node`
 * (`NodeWebhookSigner`), which keeps the signing off the thread that runs the engine. Whatever
 * the implementation, a signature is RFC 8032 Ed25519 over the same bytes.
 */
import { Context, Effect, Either, Layer, Schema } from "effect"
import { signHex } from "./internal/crypto/jwk.js"

/** A signature could not be made (a malformed key, or a broken signer). */
export class SignatureFailure extends Schema.TaggedError<SignatureFailure>()("SignatureFailure", {
  reason: Schema.String
}) {
  override get message() {
    return `signing failed: ${this.reason}`
  }
}

/** Makes webhook signatures. */
export class WebhookSigner extends Context.Tag("@appexec/core/WebhookSigner")<
  WebhookSigner,
  {
    /**
     * The hex Ed25519 signatures of `messages`, in their order, with the 32-byte secret key seed
     * given as hex; fails when any cannot be made.
     */
    readonly sign: (
      messages: ReadonlyArray<Uint8Array>,
      secretKeyHex: string
    ) => Effect.Effect<ReadonlyArray<string>, SignatureFailure>
  }
>() {}

/** The hex signature of `message` made here, synchronously; `Left` with the reason when it cannot be made. */
export const signNow = (message: Uint8Array, secretKeyHex: string): Either.Either<string, string> =>
  signHex(message, secretKeyHex)

/** Signs on the calling thread (`@noble/ed25519`): the default when no other signer is provided. */
export const inThread: WebhookSigner["Type"] = {
  sign: (messages, secretKeyHex) =>
    Effect.suspend(() => {
      const signatures: Array<string> = []
      for (const message of messages) {
        const signed = signHex(message, secretKeyHex)
        if (Either.isLeft(signed)) return Effect.fail(new SignatureFailure({ reason: signed.left }))
        signatures.push(signed.right)
      }
      return Effect.succeed(signatures)
    })
}

/** `WebhookSigner` signing on the calling thread. */
export const layer: Layer.Layer<WebhookSigner> = Layer.succeed(WebhookSigner, inThread)
