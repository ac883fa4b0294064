/**
 * Which master key seals each value the storage holds sealed: the operator's secrets and the
 * webhook signing keys. A change of master key (docs/secrets.md) ends when no value is sealed
 * with a previous key any more: only then may that key be dropped. `appexec master-key reseal`
 * prints this survey after its start has sealed again what previous keys sealed.
 */
import { Effect } from "effect"
import { AppexecConfig } from "./AppexecConfig.js"
import { InvalidConfiguration, type StorageError } from "./Errors.js"
import { SealedSecretStore } from "./SealedSecretStore.js"
import * as SecretSealing from "./SecretSealing.js"
import * as SecretStore from "./SecretStore.js"
import { SigningKeyStore } from "./SigningKeyStore.js"

/** How one stored value stands: the key that opens it, `clear` (stored before sealing), or `unreadable`. */
export type Standing = SecretSealing.OpenedBy | "clear" | "unreadable"

/** One sealed value of the storage. */
export interface SurveyedValue {
  /** `secret` or `signing key`. */
  readonly kind: "secret" | "signing key"
  /** How it is named for the operator (`API_TOKEN of the instance`, a signing key's `kid`). */
  readonly name: string
  readonly standing: Standing
}

/** Every value the storage holds sealed, with the key that opens it (secrets first, then signing keys). */
export const survey: Effect.Effect<
  ReadonlyArray<SurveyedValue>,
  StorageError | InvalidConfiguration,
  AppexecConfig | SealedSecretStore | SigningKeyStore
> = Effect.gen(function*() {
  const config = yield* AppexecConfig
  if (config.masterKey === undefined) {
    return yield* new InvalidConfiguration({ setting: "masterKey", reason: "no master key is configured" })
  }
  const sealer = yield* SecretSealing.make(config.masterKey, config.previousMasterKeys, config.nextMasterKeys).pipe(
    Effect.mapError((e) => new InvalidConfiguration({ setting: "masterKey", reason: e.reason }))
  )
  const standingOf = (sealed: string, context: string): Effect.Effect<Standing> =>
    SecretSealing.isSealed(sealed)
      ? sealer.open(sealed, context).pipe(
        Effect.map(({ by }): Standing => by),
        Effect.orElseSucceed((): Standing => "unreadable")
      )
      : Effect.succeed("clear")
  const secrets = yield* Effect.forEach(yield* (yield* SealedSecretStore).list, (row) =>
    Effect.map(
      standingOf(row.sealed, SecretStore.contextOf(row.name, row.workspaceId)),
      (standing): SurveyedValue => ({ kind: "secret", name: SecretStore.describe(row.name, row.workspaceId), standing })
    ))
  const keys = yield* Effect.forEach(yield* (yield* SigningKeyStore).list, (key) =>
    Effect.map(
      standingOf(key.secretKey, key.kid),
      (standing): SurveyedValue => ({ kind: "signing key", name: key.kid, standing })
    ))
  return [...secrets, ...keys]
})
