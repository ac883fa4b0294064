/**
 * Port: the secrets an operator manages (`appexec secrets set NAME`), such as a model provider's
 * token, which nodes refer to by name (docs/secrets.md). A secret is set for the whole instance
 * or for one workspace; a workspace's secret overrides the instance's of the same name. Values
 * are sealed at rest by the adapters (`SecretSealing`, under the master key) and are never
 * listed: `list` gives names only.
 *
 * `memory` is a store in a map, for tests and embedding without storage.
 */
import type { WorkspaceId } from "@appexec/api/Ids"
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import type { StorageError } from "./Errors.js"
import { NodeFailure } from "./NodeType.js"

/** What a secret's name may be: a letter, then letters, digits and underscores (at most 128). */
export const SecretName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z][A-Za-z0-9_]{0,127}$/, {
    message: () => "a secret's name is a letter, then letters, digits and underscores (at most 128)"
  })
)

/** Where a secret applies: the whole instance (`undefined`) or one workspace. */
export type SecretScope = WorkspaceId | undefined

/** A secret as listed: its name and scope, never its value. */
export interface SecretEntry {
  readonly name: string
  readonly workspaceId: WorkspaceId | undefined
  /** When it was last set, in milliseconds since the epoch. */
  readonly updatedAt: number
}

/** Storage of operator secrets. */
export class SecretStore extends Context.Tag("@appexec/core/SecretStore")<
  SecretStore,
  {
    /** Sets (or replaces) the secret `name` of `scope`. */
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

/** The secret `name` for a node run in `workspaceId`, or a `NodeFailure` naming what is missing. */
export const require = (
  name: string,
  workspaceId: WorkspaceId
): Effect.Effect<Redacted.Redacted<string>, NodeFailure, SecretStore> =>
  Effect.gen(function*() {
    const store = yield* Effect.serviceOption(SecretStore)
    if (Option.isNone(store)) {
      return yield* new NodeFailure({ message: `The secret ${name} is not set: this instance keeps no secrets.` })
    }
    const found = yield* store.value.resolve(name, workspaceId).pipe(
      Effect.mapError(() => new NodeFailure({ message: `The secret ${name} could not be read: storage failed.` }))
    )
    if (Option.isNone(found)) {
      return yield* new NodeFailure({
        message: `The secret ${name} is not set (an operator sets it with: appexec secrets set ${name}).`
      })
    }
    return found.value
  })

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
    set: (name, value, scope) =>
      Effect.clockWith((clock) =>
        Effect.sync(() => {
          entries.set(key(name, scope), {
            entry: { name, workspaceId: scope, updatedAt: clock.unsafeCurrentTimeMillis() },
            value
          })
        })
      ),
    list: Effect.sync(() =>
      [...entries.values()].map((e) => e.entry).sort((a, b) =>
        a.name === b.name ? (a.workspaceId ?? "").localeCompare(b.workspaceId ?? "") : a.name < b.name ? -1 : 1
      )
    ),
    delete: (name, scope) => Effect.sync(() => entries.delete(key(name, scope))),
    resolve: (name, workspaceId) =>
      Effect.sync(() =>
        Option.fromNullable((entries.get(key(name, workspaceId)) ?? entries.get(key(name, undefined)))?.value)
      )
  }
}

/** `memory` as a layer. */
export const layerMemory = (initial: Readonly<Record<string, string>> = {}): Layer.Layer<SecretStore> =>
  Layer.sync(SecretStore, () => memory(initial))
