/**
 * Port: identifiers and secret tokens, so that tests can make them deterministic.
 */
import { Context, Effect, Encoding, Layer } from "effect"

/** Source of ids and random tokens. */
export class IdGenerator extends Context.Tag("@appexec/core/IdGenerator")<
  IdGenerator,
  {
    /** A fresh UUID (lower-case, hyphenated). */
    readonly uuid: Effect.Effect<string>
    /** `bytes` random bytes, base64url-encoded; used for API keys and signed paths. */
    readonly token: (bytes: number) => Effect.Effect<string>
  }
>() {
  /** Cryptographically random ids from Web Crypto (the production default, in every runtime). */
  static readonly random = Layer.succeed(IdGenerator, {
    uuid: Effect.sync(() => globalThis.crypto.randomUUID()),
    token: (bytes) =>
      Effect.sync(() => Encoding.encodeBase64Url(globalThis.crypto.getRandomValues(new Uint8Array(bytes))))
  })
}
