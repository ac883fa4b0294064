/**
 * One layer for a whole appexec instance over a chosen storage: node registry (core nodes plus
 * the host's own), settings, the app catalog, the `Appexec` facade, the webhook signing keys,
 * the operator's secrets (`SecretStore`, sealed with the master key), its stop (`Shutdown`), and,
 * unless turned off, a worker (with the webhook events of its runs) and a webhook dispatcher, and,
 * when the host says who the process is, its row in the registry of processes (`Presence`).
 * Every logger of the instance masks secrets (`Redactor`). The outbound HTTP client (webhooks, media, provider calls) comes from the host:
 * `NodeOutboundHttp` of `@appexec/platform-node` on Node.
 */
import { Layer } from "effect"
import * as Appexec from "./Appexec.js"
import { AppexecConfig, type AppexecOptions } from "./AppexecConfig.js"
import type { AppStore } from "./AppStore.js"
import type { BlobStore } from "./BlobStore.js"
import { coreNodes } from "./CoreNodes.js"
import type { InvalidConfiguration } from "./Errors.js"
import { ExecutionEvents } from "./ExecutionEvents.js"
import type { ExecutionQueue } from "./ExecutionQueue.js"
import type { ExecutionReports } from "./ExecutionReports.js"
import type { ExecutionStore } from "./ExecutionStore.js"
import type { IdGenerator } from "./IdGenerator.js"
import { Cancellations } from "./internal/engine/Cancellations.js"
import * as Presence from "./internal/engine/Presence.js"
import * as Retention from "./internal/engine/Retention.js"
import * as WebhookEvents from "./internal/engine/WebhookEvents.js"
import * as Worker from "./internal/engine/Worker.js"
import * as AppCatalog from "./internal/facade/AppCatalog.js"
import type { KeyStore } from "./KeyStore.js"
import * as NodeRegistry from "./NodeRegistry.js"
import type * as NodeType from "./NodeType.js"
import type { OperatorViews } from "./OperatorViews.js"
import type { OutboundHttp } from "./OutboundHttp.js"
import * as ProcessIdentity from "./ProcessIdentity.js"
import type { ProcessRegistry } from "./ProcessRegistry.js"
import type { RateLimitStore } from "./RateLimitStore.js"
import * as Redactor from "./Redactor.js"
import type { SealedSecretStore } from "./SealedSecretStore.js"
import * as SecretStore from "./SecretStore.js"
import { Shutdown } from "./Shutdown.js"
import * as SigningKeys from "./SigningKeys.js"
import type { SigningKeyStore } from "./SigningKeyStore.js"
import * as WebhookDispatcher from "./WebhookDispatcher.js"
import type { WebhookOutbox } from "./WebhookOutbox.js"

/** Every storage port; an adapter package provides all of them with one layer. */
export type Storage =
  | AppStore
  | ExecutionStore
  | ExecutionReports
  | ExecutionQueue
  | WebhookOutbox
  | KeyStore
  | BlobStore
  | SigningKeyStore
  | RateLimitStore
  | OperatorViews
  | SealedSecretStore
  | ProcessRegistry

/** How to assemble an instance. */
export interface Options<Nodes extends ReadonlyArray<NodeType.Any>> {
  /** Node types besides the core ones. */
  readonly nodes?: Nodes
  /** Settings that differ from the defaults. */
  readonly config?: Partial<AppexecOptions>
  /** Run a worker in this process (default true). */
  readonly worker?: boolean
  /** Run a webhook dispatcher in this process (default true). */
  readonly webhooks?: boolean
  /**
   * The process environment (`process.env` on Node): its `APPEXEC_SECRET_<NAME>` variables are
   * secrets too, below the sealed store (`SecretStore.layerWithEnvironment`). Absent: none.
   */
  readonly environment?: Readonly<Record<string, string | undefined>>
  /**
   * Delete finished executions past `config.retention` in this process, every
   * `config.retentionInterval` (default: where a worker runs).
   */
  readonly retention?: boolean
  /**
   * Who this process is (`ProcessIdentity`): with it, the instance keeps a row of itself in the
   * registry of processes (`ProcessRegistry`) while it runs, and its worker's leases name it.
   * Absent: a worker's leases name `appexec#…`, and the instance keeps no row.
   */
  readonly process?: ProcessIdentity.Options
}

/** Services an instance offers to its host. */
export type Services =
  | Appexec.Appexec
  | AppCatalog.AppCatalog
  | Cancellations
  | ExecutionEvents
  | AppexecConfig
  | NodeRegistry.NodeRegistry
  | SigningKeys.SigningKeys
  | SecretStore.SecretStore
  | Shutdown

/**
 * What the instance provides to node types itself, so they need not come from the host: the
 * settings, and the operator's secrets (sealed in its storage with `config.masterKey`, and the
 * environment's below them when `environment` is given).
 */
export type Provided = AppexecConfig | SecretStore.SecretStore

/**
 * The instance. It needs the storage ports, an `IdGenerator`, the `OutboundHttp` client, and
 * whatever the extra node types need.
 *
 * ```ts
 * const AppexecLive = AppexecLayer.make({ nodes: [myNode] }).pipe(
 *   Layer.provide(SqliteStorage.layer({ filename: "appexec.db" })),
 *   Layer.provide(IdGenerator.IdGenerator.random),
 *   Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: false }))
 * )
 * ```
 */
export const make = <const Nodes extends ReadonlyArray<NodeType.Any> = readonly []>(
  options: Options<Nodes> = {}
): Layer.Layer<
  Services,
  InvalidConfiguration,
  Storage | IdGenerator | OutboundHttp | Exclude<NodeType.NodeRequirements<Nodes[number]>, Provided>
> => {
  // Every logger of the instance (the host's included) masks secrets (`Redactor`): provided first,
  // so that every layer built after it, the worker's and the dispatcher's fibers too, logs through it.
  const settings = AppexecConfig.layer(options.config).pipe(Layer.provide(Redactor.layerLoggers))
  // What node types are given (`Provided`): the settings, and the secrets sealed with their master key.
  const secrets = options.environment === undefined
    ? SecretStore.layer
    : SecretStore.layerWithEnvironment(options.environment)
  const provided = secrets.pipe(Layer.provideMerge(settings))
  const base = Layer.mergeAll(
    NodeRegistry.layer([...coreNodes, ...(options.nodes ?? [])]),
    ExecutionEvents.layer,
    Cancellations.layer,
    Shutdown.layer,
    SigningKeys.layer
  ).pipe(Layer.provideMerge(provided))
  const facade = Appexec.layer.pipe(Layer.provideMerge(AppCatalog.layer), Layer.provideMerge(base))
  // The identity is drawn where the worker drew its lease owner id before it had one. The row of
  // the process (when the host says who it is) is written once the work is set up, and deleted
  // first as the instance stops.
  const identity = ProcessIdentity.layer(options.process ?? { name: "appexec", role: "embedded", version: "unknown" })
  const present = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
    options.process === undefined ? layer : Presence.layer.pipe(Layer.provideMerge(layer))
  // The runs' webhook events are followed where they run, from before the worker takes any.
  const withWorker = options.worker === false
    ? options.process === undefined ? facade : present(identity.pipe(Layer.provideMerge(facade)))
    : present(Worker.layer.pipe(
      Layer.provideMerge(identity),
      Layer.provideMerge(WebhookEvents.layer.pipe(Layer.provideMerge(facade)))
    ))
  const withRetention = (options.retention ?? options.worker !== false)
    ? Retention.layer.pipe(Layer.provideMerge(withWorker))
    : withWorker
  return options.webhooks === false ? withRetention : WebhookDispatcher.layer.pipe(Layer.provideMerge(withRetention))
}
