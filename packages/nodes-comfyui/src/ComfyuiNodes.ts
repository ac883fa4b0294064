/**
 * The node types of `@appexec/nodes-comfyui` (docs/nodes.md#providercomfyui), to pass to
 * `AppexecLayer.make` or `TestHarness.layer` beside the built-in nodes, and the layer of what
 * they need besides: the ComfyUI servers' settings and their pool. The guarded outbound client
 * (also the pool's, to probe a server that is down), the media settings and the blob store come
 * from the instance.
 */
import { type NodeType, type OutboundHttp, Routing } from "@appexec/core"
import { type ConfigError, Effect, Layer } from "effect"
import * as ComfyuiPool from "./ComfyuiPool.js"
import * as ComfyuiSettings from "./ComfyuiSettings.js"
import { providerComfyui } from "./ProviderComfyui.js"

/** Every node type of the package. */
export const comfyuiNodes = [providerComfyui] as const

/** The services the ComfyUI nodes need besides the storage ports and what the instance provides. */
export type Requirements = NodeType.NodeRequirements<(typeof comfyuiNodes)[number]>

/** The settings (the defaults with `overrides`) and the pool of their servers. */
export const layer = (
  overrides: Partial<ComfyuiSettings.Settings> = {}
): Layer.Layer<
  ComfyuiPool.ComfyuiPool | ComfyuiSettings.ComfyuiSettings | Routing.NodeResources,
  never,
  OutboundHttp.OutboundHttp
> => resources.pipe(Layer.provideMerge(ComfyuiPool.layer), Layer.provideMerge(ComfyuiSettings.layer(overrides)))

/**
 * The servers as a resource of the deployment (`Routing.NodeResources`): at most their total
 * capacity of executions using `provider.comfyui` run at once across every process, the others
 * waiting in appexec's queue with their queue position (docs/scaling.md#limits). Every process
 * should be given the same servers.
 */
export const resources: Layer.Layer<Routing.NodeResources, never, ComfyuiPool.ComfyuiPool> = Layer.effect(
  Routing.NodeResources,
  Effect.map(ComfyuiPool.ComfyuiPool, (pool) =>
    pool.servers.length === 0 ? [] : [{
      resource: "comfyui",
      nodeType: "provider.comfyui",
      limit: pool.servers.reduce((total, server) => total + pool.capacityOf(server), 0)
    }])
)

/** As `layer`, the settings read from effect `Config` (`APPEXEC_COMFYUI`, `ComfyuiSettings.config`). */
export const layerConfig: Layer.Layer<
  ComfyuiPool.ComfyuiPool | ComfyuiSettings.ComfyuiSettings,
  ConfigError.ConfigError,
  OutboundHttp.OutboundHttp
> = ComfyuiPool.layer.pipe(
  Layer.provideMerge(Layer.effect(ComfyuiSettings.ComfyuiSettings, Effect.suspend(() => ComfyuiSettings.config)))
)
