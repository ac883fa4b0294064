/**
 * Every storage port in memory: fresh and empty each time the layer is built.
 */
import { MediaStoreRegistry, RateLimitStore } from "@appexec/core"
import { Layer } from "effect"
import * as MemoryAppStore from "./MemoryAppStore.js"
import * as MemoryBlobStore from "./MemoryBlobStore.js"
import * as MemoryExecutions from "./MemoryExecutions.js"
import * as MemoryKeyStore from "./MemoryKeyStore.js"
import * as MemoryProcessRegistry from "./MemoryProcessRegistry.js"
import * as MemorySealedSecretStore from "./MemorySealedSecretStore.js"
import * as MemorySigningKeyStore from "./MemorySigningKeyStore.js"

/** All storage ports on in-memory adapters (the registry of processes too), and a registry of media stores. */
export const layer = Layer.mergeAll(
  MemoryAppStore.layer,
  MemoryExecutions.layer,
  MemoryKeyStore.layer,
  MemoryBlobStore.layer,
  MemorySigningKeyStore.layer,
  RateLimitStore.layerMemory(),
  MemorySealedSecretStore.layer,
  MemoryProcessRegistry.layer,
  MediaStoreRegistry.layerMemory()
)
