/**
 * The appexec instance of the media benchmarks (`images`, `media`, `ocr`): in memory, with the built-in
 * nodes (those of `@appexec/nodes`, `@appexec/nodes-image` and `@appexec/nodes-video`), signed
 * media URLs, no webhooks, and warnings only in the log.
 */
import { type AppexecConfig, AppexecLayer, IdGenerator, MediaUrls, type NodeType } from "@appexec/core"
import { BuiltinNodes, builtinNodes } from "@appexec/nodes"
import { imageNodes } from "@appexec/nodes-image"
import { videoNodes } from "@appexec/nodes-video"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { MemoryStorage } from "@appexec/testing"
import { Layer, Logger, LogLevel, Redacted } from "effect"
import { randomBytes } from "node:crypto"

/**
 * An instance in memory with `nodes` and `config` (what the node types need beyond the built-in
 * nodes' services stays for the caller to provide).
 */
export const make = <const Nodes extends ReadonlyArray<NodeType.Any>>(
  nodes: Nodes,
  config: Partial<AppexecConfig.AppexecOptions> = {}
) =>
  AppexecLayer.make({ nodes, webhooks: false, config }).pipe(
    Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: true })),
    Layer.provide(
      BuiltinNodes.layer({
        mediaUrls: MediaUrls.layer({
          mode: "signed",
          baseUrl: "http://127.0.0.1:8080",
          secret: Redacted.make(randomBytes(32))
        })
      })
    ),
    Layer.provide(MemoryStorage.layer),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
  )

/** The instance's layer with every built-in node: `Appexec` and the rest of `AppexecLayer.make`. */
export const layer = make([...builtinNodes, ...imageNodes, ...videoNodes])
