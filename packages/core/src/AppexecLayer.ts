/**
 * One layer for a whole appexec instance over a chosen storage: node registry (core nodes plus
 * the host's own), settings, the app catalog, the `Appexec` facade and, unless turned off, a worker.
 */
import { Layer } from "effect"
import * as Appexec from "./Appexec.js"
import * as AppCatalog from "./AppCatalog.js"
import { AppexecConfig, type AppexecOptions } from "./AppexecConfig.js"
import type { AppStore } from "./AppStore.js"
import type { BlobStore } from "./BlobStore.js"
import { coreNodes } from "./CoreNodes.js"
import { ExecutionEvents } from "./ExecutionEvents.js"
import type { ExecutionQueue } from "./ExecutionQueue.js"
import type { ExecutionStore } from "./ExecutionStore.js"
import type { IdGenerator } from "./IdGenerator.js"
import type { KeyStore } from "./KeyStore.js"
import * as NodeRegistry from "./NodeRegistry.js"
import type { NodeRequirements, NodeType } from "./NodeType.js"
import type { RateLimitStore } from "./RateLimitStore.js"
import type { SigningKeyStore } from "./SigningKeyStore.js"
import type { WebhookOutbox } from "./WebhookOutbox.js"
import * as Worker from "./Worker.js"

/** Every storage port; an adapter package provides all of them with one layer. */
export type Storage =
  | AppStore
  | ExecutionStore
  | ExecutionQueue
  | WebhookOutbox
  | KeyStore
  | BlobStore
  | SigningKeyStore
  | RateLimitStore

/** How to assemble an instance. */
export interface Options<Nodes extends ReadonlyArray<NodeType<any, any, any>>> {
  /** Node types besides the core ones. */
  readonly nodes?: Nodes
  /** Settings that differ from the defaults. */
  readonly config?: Partial<AppexecOptions>
  /** Run a worker in this process (default true). */
  readonly worker?: boolean
}

/** Services an instance offers to its host. */
export type Services = Appexec.Appexec | AppCatalog.AppCatalog | ExecutionEvents | AppexecConfig | NodeRegistry.NodeRegistry

/**
 * The instance. It needs the storage ports, an `IdGenerator`, and whatever the extra node types need.
 *
 * ```ts
 * const AppexecLive = AppexecLayer.make({ nodes: [myNode] }).pipe(
 *   Layer.provide(SqliteStorage.layer({ filename: "appexec.db" })),
 *   Layer.provide(IdGenerator.IdGenerator.random)
 * )
 * ```
 */
export const make = <const Nodes extends ReadonlyArray<NodeType<any, any, any>> = readonly []>(
  options: Options<Nodes> = {}
): Layer.Layer<Services, never, Storage | IdGenerator | NodeRequirements<Nodes[number]>> => {
  const base = Layer.mergeAll(
    NodeRegistry.layer([...coreNodes, ...(options.nodes ?? [])]),
    AppexecConfig.layer(options.config),
    ExecutionEvents.layer
  )
  const facade = Appexec.layer.pipe(Layer.provideMerge(AppCatalog.layer), Layer.provideMerge(base))
  return options.worker === false ? facade : Worker.layer.pipe(Layer.provideMerge(facade))
}
