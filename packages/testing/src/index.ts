/**
 * @appexec/testing: in-memory adapters and the deterministic harness. The port contract suites
 * live at `@appexec/testing/contracts`: they import vitest, which only loads inside a test run.
 */
export * as MemoryAppStore from "./MemoryAppStore.js"
export * as MemoryBlobStore from "./MemoryBlobStore.js"
export * as MemoryExecutions from "./MemoryExecutions.js"
export * as MemoryKeyStore from "./MemoryKeyStore.js"
export * as MemoryProcessRegistry from "./MemoryProcessRegistry.js"
export * as MemorySealedSecretStore from "./MemorySealedSecretStore.js"
export * as MemorySigningKeyStore from "./MemorySigningKeyStore.js"
export * as MemoryStorage from "./MemoryStorage.js"
export * as SeededIds from "./SeededIds.js"
export * as TestApps from "./TestApps.js"
export * as TestFalServer from "./TestFalServer.js"
export * as TestHarness from "./TestHarness.js"
export * as TestHttpServer from "./TestHttpServer.js"
export * as TestOpenAiServer from "./TestOpenAiServer.js"
export * as TestOutboundHttp from "./TestOutboundHttp.js"
export * as TestReceiver from "./TestReceiver.js"
export * as TestReplicateServer from "./TestReplicateServer.js"
export * as TestS3rver from "./TestS3rver.js"
