/**
 * Request headers that name the operator's secrets, as `http.request`, `http.job` and the
 * provider nodes resolve them for a run: one place, one order, one failure. A secret comes from
 * the instance's one source, `SecretStore`: the one set with `appexec secrets set` (the
 * execution's workspace's, else the instance's), else an `APPEXEC_SECRET_<NAME>` variable of the
 * process (the environment, the store's lowest layer). Each value found is registered with the
 * redactor (`Redactor`), so that wherever a provider echoes it, it is masked; the header stays
 * `Redacted` until the outbound client writes it to the wire (`OutboundHttp.wireHeaders`).
 */
import { type NodeType, Redactor, SecretStore } from "@appexec/core"
import { Effect, Option, Redacted } from "effect"

/** A header whose value is the operator's secret `secret`, after an optional `prefix` (`"Bearer "`). */
export interface SecretHeader {
  readonly secret: string
  readonly prefix?: string | undefined
}

/** Header values as sent: a secret one stays redacted until written. Names are lower-cased. */
export type Headers = Readonly<Record<string, string | Redacted.Redacted<string>>>

type WorkspaceId = NodeType.NodeContext<unknown>["execution"]["workspaceId"]

/**
 * The value of the operator's secret `name` for a run in `workspaceId` (`SecretStore.find`),
 * registered with the redactor. A `NodeFailure` names it when it is set nowhere, or says it
 * could not be read.
 */
export const secretValue = (
  name: string,
  workspaceId: WorkspaceId
): Effect.Effect<Redacted.Redacted<string>, NodeType.NodeFailure> =>
  Effect.gen(function*() {
    const found = yield* SecretStore.find(name, workspaceId)
    if (Option.isNone(found)) return yield* SecretStore.notSet(name)
    yield* Redactor.register(found.value)
    return found.value
  })

/**
 * The headers of a node's config with their secrets read for `workspaceId` (`secretValue`),
 * names lower-cased, and the names of the secrets they use (for the hint of a refused token).
 */
export const resolve = (
  headers: Readonly<Record<string, string | SecretHeader>> | undefined,
  workspaceId: WorkspaceId
): Effect.Effect<{ readonly headers: Headers; readonly names: ReadonlyArray<string> }, NodeType.NodeFailure> =>
  Effect.gen(function*() {
    const resolved: Record<string, string | Redacted.Redacted<string>> = {}
    const names: Array<string> = []
    for (const [name, value] of Object.entries(headers ?? {})) {
      if (typeof value === "string") {
        resolved[name.toLowerCase()] = value
        continue
      }
      const secret = yield* secretValue(value.secret, workspaceId)
      names.push(value.secret)
      resolved[name.toLowerCase()] = Redacted.make(`${value.prefix ?? ""}${Redacted.value(secret)}`)
    }
    return { headers: resolved, names }
  })
