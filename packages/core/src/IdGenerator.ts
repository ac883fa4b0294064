/**
 * Port: identifiers and secret tokens, so that tests can make them deterministic.
 */
import { Context, Effect, Layer } from "effect"
import { randomBytes, randomUUID } from "node:crypto"

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
  /** Cryptographically random ids (the production default). */
  static readonly random = Layer.succeed(IdGenerator, {
    uuid: Effect.sync(() => randomUUID()),
    token: (bytes) => Effect.sync(() => randomBytes(bytes).toString("base64url"))
  })
}
