/**
 * Port: the secrets an operator manages (`appexec secrets set NAME`), such as a model provider's
 * token, which nodes refer to by name (docs/secrets.md). A secret is set for the whole instance
 * or for one workspace; a workspace's secret overrides the instance's of the same name. Values
 * are sealed at rest (`SecretSealing`, under the master key) and are never listed: `list` gives
 * names only.
 *
 * `layer` is the store of an instance: every value sealed with the master key for its name and
 * scope before it reaches the `SealedSecretStore` of the storage, opened on every read (so a
 * secret set by another process is used at once), and sealed again with the current master key
 * when a previous one opened it; `layerWithEnvironment` puts the process environment's
 * `APPEXEC_SECRET_<NAME>` variables below it, so that nodes read secrets from one source.
 * `memory` is a store in a map, for tests and embedding without storage. Every value a store reads or sets is registered with the redactor in force
 * (`Redactor`), and so are the master keys: none is ever written in the clear.
 */
import type { WorkspaceId } from "@appexec/api/Ids"
import { Clock, Context, Effect, Either, Layer, Option, Redacted, Schema } from "effect"
import { AppexecConfig } from "./AppexecConfig.js"
import { InvalidConfiguration, StorageError } from "./Errors.js"
import { NodeFailure } from "./NodeType.js"
import * as Redactor from "./Redactor.js"
import { type SealedSecret, SealedSecretStore } from "./SealedSecretStore.js"
import * as SecretSealing from "./SecretSealing.js"

/** What a secret's name may be: a letter, then letters, digits and underscores (at most 128). */
export const SecretName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z][A-Za-z0-9_]{0,127}$/, {
    message: () => "a secret's name is a letter, then letters, digits and underscores (at most 128)"
  })
)

/** The largest value a secret may hold, in bytes (UTF-8). */
export const MAX_VALUE_BYTES = 65_536

/**
 * Why `name` and `value` cannot be a secret, if they cannot: a name against `SecretName`, a value
 * that is empty (or only white space) or longer than `MAX_VALUE_BYTES`. Never quotes the value.
 */
export const problemOf = (name: string, value: Redacted.Redacted<string>): string | undefined => {
  if (Either.isLeft(Schema.decodeUnknownEither(SecretName)(name))) {
    return `'${name}' is not a secret's name: a letter, then letters, digits and underscores (at most 128)`
  }
  const text = Redacted.value(value)
  if (text.trim() === "") return `the value of the secret ${name} is empty`
  const bytes = new TextEncoder().encode(text).length
  if (bytes > MAX_VALUE_BYTES) {
    return `the value of the secret ${name} is ${bytes} bytes, more than the ${MAX_VALUE_BYTES} a secret may hold`
  }
  return undefined
}

/** Where a secret applies: the whole instance (`undefined`) or one workspace. */
export type SecretScope = WorkspaceId | undefined

/** A secret as listed: its name and scope, never its value. */
export interface SecretEntry {
  readonly name: string
  readonly workspaceId: WorkspaceId | undefined
  /** When it was last set, in milliseconds since the epoch. */
  readonly updatedAt: number
}

/** The order `list` answers in: by name, then the instance's before the workspaces' by id. */
const byNameThenScope = (a: SecretEntry, b: SecretEntry): number =>
  a.name !== b.name ? (a.name < b.name ? -1 : 1) : (a.workspaceId ?? "") < (b.workspaceId ?? "") ? -1 : 1

/** Storage of operator secrets. */
export class SecretStore extends Context.Tag("@appexec/core/SecretStore")<
  SecretStore,
  {
    /** Sets (or replaces) the secret `name` of `scope`; refuses what `problemOf` refuses. */
    readonly set: (
      name: string,
      value: Redacted.Redacted<string>,
      scope: SecretScope
    ) => Effect.Effect<void, StorageError>
    /** Every secret's name and scope (all scopes), ordered by name then scope; never a value. */
    readonly list: Effect.Effect<ReadonlyArray<SecretEntry>, StorageError>
    /** Deletes the secret `name` of `scope`; whether there was one. */
    readonly delete: (name: string, scope: SecretScope) => Effect.Effect<boolean, StorageError>
    /** The value of `name` for a run in `workspaceId`: the workspace's own, else the instance's. */
    readonly resolve: (
      name: string,
      workspaceId: WorkspaceId
    ) => Effect.Effect<Option.Option<Redacted.Redacted<string>>, StorageError>
  }
>() {}

/** The failure of a node run whose secret `name` is set nowhere. */
export const notSet = (name: string): NodeFailure =>
  new NodeFailure({ message: `The secret ${name} is not set (an operator sets it with: appexec secrets set ${name}).` })

/**
 * The secret `name` for a node run in `workspaceId`, if the instance keeps it (none without a
 * store); a `NodeFailure` when it cannot be read, the operator's log saying why.
 */
export const find = (
  name: string,
  workspaceId: WorkspaceId
): Effect.Effect<Option.Option<Redacted.Redacted<string>>, NodeFailure> =>
  Effect.flatMap(
    Effect.serviceOption(SecretStore),
    (store) =>
      Option.isNone(store) ? Effect.succeedNone : store.value.resolve(name, workspaceId).pipe(
        // The operator's log says why; the consumer sees that it could not be read.
        Effect.tapError((error) => Effect.logWarning(`the secret ${name} could not be read`, error.cause)),
        Effect.mapError(() => new NodeFailure({ message: `The secret ${name} could not be read: storage failed.` }))
      )
  )

/** The secret `name` for a node run in `workspaceId`, or a `NodeFailure` naming what is missing. */
export const require = (
  name: string,
  workspaceId: WorkspaceId
): Effect.Effect<Redacted.Redacted<string>, NodeFailure, SecretStore> =>
  Effect.gen(function*() {
    if (Option.isNone(yield* Effect.serviceOption(SecretStore))) {
      return yield* new NodeFailure({ message: `The secret ${name} is not set: this instance keeps no secrets.` })
    }
    const found = yield* find(name, workspaceId)
    if (Option.isNone(found)) return yield* notSet(name)
    return found.value
  })

/** `found`, registered with the redactor in force: every value a store reads is masked from then on. */
const registered = (
  found: Option.Option<Redacted.Redacted<string>>
): Effect.Effect<Option.Option<Redacted.Redacted<string>>> =>
  Option.isNone(found) ? Effect.succeed(found) : Effect.as(Redactor.register(found.value), found)

/** A store in a map (tests, embedding without storage), holding `initial` instance secrets. */
export const memory = (initial: Readonly<Record<string, string>> = {}): SecretStore["Type"] => {
  const key = (name: string, scope: SecretScope) => `${scope ?? ""}\u0000${name}`
  const entries = new Map<string, { entry: SecretEntry; value: Redacted.Redacted<string> }>()
  for (const [name, value] of Object.entries(initial)) {
    entries.set(key(name, undefined), {
      entry: { name, workspaceId: undefined, updatedAt: 0 },
      value: Redacted.make(value)
    })
  }
  return {
    set: (name, value, scope) => {
      const problem = problemOf(name, value)
      if (problem !== undefined) return Effect.fail(new StorageError({ operation: "secrets.set", cause: problem }))
      return Effect.clockWith((clock) =>
        Effect.zipRight(
          Redactor.register(value),
          Effect.sync(() => {
            entries.set(key(name, scope), {
              entry: { name, workspaceId: scope, updatedAt: clock.unsafeCurrentTimeMillis() },
              value
            })
          })
        )
      )
    },
    list: Effect.sync(() => [...entries.values()].map((e) => e.entry).sort(byNameThenScope)),
    delete: (name, scope) => Effect.sync(() => entries.delete(key(name, scope))),
    resolve: (name, workspaceId) =>
      Effect.flatMap(
        Effect.sync(() =>
          Option.fromNullable((entries.get(key(name, workspaceId)) ?? entries.get(key(name, undefined)))?.value)
        ),
        registered
      )
  }
}

/** What a secret is sealed for: its scope and name, so a sealed value moved to another row does not open. */
export const contextOf = (name: string, scope: SecretScope) => `secret:${scope ?? ""}:${name}`

/** How a secret is named for the operator: `API_TOKEN of the instance`, `API_TOKEN of workspace <id>`. */
export const describe = (name: string, scope: SecretScope) =>
  `${name} of ${scope === undefined ? "the instance" : `workspace ${scope}`}`

const encoder = new TextEncoder()
const decoder = new TextDecoder("utf-8", { fatal: true })

/**
 * The store of an instance over the `SealedSecretStore` of its storage, sealing with the master
 * keys of `AppexecConfig`. Without a master key nothing is set (values are never stored in the
 * clear). At start, values sealed with a previous master key are sealed again with the current
 * one, and values no given key opens are named in a warning (never their values).
 */
export const make = Effect.gen(function*() {
  const rows = yield* SealedSecretStore
  const config = yield* AppexecConfig
  // The master keys are masked wherever they might be written, like every secret.
  const redactor = yield* Redactor.Redactor
  for (
    const key of [
      ...(config.masterKey === undefined ? [] : [config.masterKey]),
      ...config.previousMasterKeys,
      ...config.nextMasterKeys
    ]
  ) {
    redactor.registerBytes(key)
  }
  const sealer = config.masterKey === undefined
    ? undefined
    : yield* SecretSealing.make(config.masterKey, config.previousMasterKeys, config.nextMasterKeys).pipe(
      Effect.mapError((e) => new InvalidConfiguration({ setting: "masterKey", reason: e.reason }))
    )

  /** The value of a row, sealed again with the current master key when a previous one opened it. */
  const open = (row: SealedSecret) =>
    Effect.gen(function*() {
      if (sealer === undefined) {
        return yield* new StorageError({
          operation: "secrets.open",
          cause: `the secret ${describe(row.name, row.workspaceId)} is sealed and no master key is configured`
        })
      }
      const context = contextOf(row.name, row.workspaceId)
      const opened = yield* sealer.open(row.sealed, context).pipe(
        Effect.mapError(() =>
          new StorageError({
            operation: "secrets.open",
            cause: `the secret ${
              describe(row.name, row.workspaceId)
            } cannot be opened: no master key given opens it (it was sealed with another key, or is damaged); give the key that sealed it as a previous master key, or set the secret again`
          })
        )
      )
      if (!opened.current) {
        const again = yield* sealer.seal(opened.secret, context).pipe(
          Effect.mapError((e) => new StorageError({ operation: "secrets.seal", cause: e.reason }))
        )
        if (yield* rows.reseal(row.name, row.workspaceId, row.sealed, again)) {
          yield* Effect.logInfo(`secret ${describe(row.name, row.workspaceId)} sealed with the new master key`)
        }
      }
      return yield* Effect.try({
        try: () => Redacted.make(decoder.decode(opened.secret)),
        catch: () =>
          new StorageError({
            operation: "secrets.open",
            cause: `the secret ${describe(row.name, row.workspaceId)} is not UTF-8 text`
          })
      })
    })

  /** Seals again what a previous master key sealed; names what no key opens. */
  const resealStored = Effect.gen(function*() {
    const stored = yield* rows.list
    if (stored.length === 0) return
    if (sealer === undefined) {
      return yield* Effect.logWarning(
        `${stored.length} stored secrets cannot be used: they are sealed and no master key is configured`
      )
    }
    for (const row of stored) {
      yield* open(row).pipe(Effect.catchAll((error) => Effect.logWarning(String(error.cause))))
    }
  }).pipe(
    Effect.catchAll((error) => Effect.logWarning("stored secrets not checked at start", error.cause))
  )
  yield* resealStored

  const service: SecretStore["Type"] = {
    set: Effect.fn("SecretStore.set")(function*(name, value, scope) {
      const problem = problemOf(name, value)
      if (problem !== undefined) return yield* new StorageError({ operation: "secrets.set", cause: problem })
      if (sealer === undefined) {
        return yield* new StorageError({
          operation: "secrets.set",
          cause: "no master key is configured: secrets are only stored sealed with it (masterKey)"
        })
      }
      const sealed = yield* sealer.seal(encoder.encode(Redacted.value(value)), contextOf(name, scope)).pipe(
        Effect.mapError((e) => new StorageError({ operation: "secrets.seal", cause: e.reason }))
      )
      yield* rows.put({ name, workspaceId: scope, sealed, updatedAt: yield* Clock.currentTimeMillis })
      redactor.register(value)
    }),
    list: rows.list.pipe(
      Effect.map((all) =>
        all
          .map(({ name, updatedAt, workspaceId }): SecretEntry => ({ name, workspaceId, updatedAt }))
          .sort(byNameThenScope)
      )
    ),
    delete: Effect.fn("SecretStore.delete")((name, scope) => rows.delete(name, scope)),
    resolve: Effect.fn("SecretStore.resolve")(function*(name, workspaceId) {
      const found = yield* rows.find(name, workspaceId)
      const row = found.find((r) => r.workspaceId === workspaceId) ?? found.find((r) => r.workspaceId === undefined)
      if (row === undefined) return Option.none()
      const value = yield* open(row)
      redactor.register(value)
      return Option.some(value)
    })
  }
  return service
})

/** `make` as a layer: the secrets of an instance over its storage; needs the settings (master keys). */
export const layer: Layer.Layer<SecretStore, InvalidConfiguration, SealedSecretStore | AppexecConfig> = Layer.effect(
  SecretStore,
  make
)

/** Prefix of the environment variables that hold secrets: `APPEXEC_SECRET_PROVIDER_TOKEN` is the secret `provider_token`. */
export const ENVIRONMENT_PREFIX = "APPEXEC_SECRET_"

/** The secrets among environment variables: every non-empty `APPEXEC_SECRET_<NAME>`, named `<name>` in lower case. */
export const fromEnvironment = (
  env: Readonly<Record<string, string | undefined>>
): ReadonlyMap<string, Redacted.Redacted<string>> =>
  new Map(
    Object.entries(env)
      .filter((entry): entry is [string, string] =>
        entry[0].startsWith(ENVIRONMENT_PREFIX) && entry[0].length > ENVIRONMENT_PREFIX.length &&
        entry[1] !== undefined && entry[1] !== ""
      )
      .map(([name, value]) => [name.slice(ENVIRONMENT_PREFIX.length).toLowerCase(), Redacted.make(value)])
  )

/**
 * `store` with the environment's secrets below it (`fromEnvironment`): a name the store holds
 * for neither the workspace nor the instance is looked up there, for every workspace alike, and
 * registered with the redactor when found. Setting, listing and deleting are the store's alone.
 */
export const withEnvironment = (
  store: SecretStore["Type"],
  environment: ReadonlyMap<string, Redacted.Redacted<string>>
): SecretStore["Type"] =>
  environment.size === 0 ? store : {
    ...store,
    resolve: (name, workspaceId) =>
      Effect.flatMap(
        store.resolve(name, workspaceId),
        (found) => Option.isSome(found) ? Effect.succeed(found) : registered(Option.fromNullable(environment.get(name)))
      )
  }

/**
 * The secrets of an instance (`layer`) with the `APPEXEC_SECRET_<NAME>` variables of `env` as
 * their lowest source (`withEnvironment`): one source of secrets for the nodes, the sealed store
 * first.
 */
export const layerWithEnvironment = (
  env: Readonly<Record<string, string | undefined>>
): Layer.Layer<SecretStore, InvalidConfiguration, SealedSecretStore | AppexecConfig> => {
  const environment = fromEnvironment(env)
  return Layer.effect(SecretStore, Effect.map(make, (store) => withEnvironment(store, environment)))
}
