/**
 * @appexec/testing/contracts: the port contract suites every storage adapter must pass. Each
 * takes a name and a function that builds fresh storage (a layer of every storage port):
 *
 * ```ts
 * StorageContract.suite("sqlite", () => SqliteStorage.layer({ filename: tempFile() }))
 * ```
 */
export * as AppStoreContract from "./AppStoreContract.js"
export * as BlobStoreContract from "./BlobStoreContract.js"
export * as CancelAndIdempotencyContract from "./CancelAndIdempotencyContract.js"
export * as CapacityContract from "./CapacityContract.js"
export * as ExecutionPagesContract from "./ExecutionPagesContract.js"
export * as ExecutionQueueContract from "./ExecutionQueueContract.js"
export * as ExecutionReportsContract from "./ExecutionReportsContract.js"
export * as ExecutionStoreContract from "./ExecutionStoreContract.js"
export * as KeyStoreContract from "./KeyStoreContract.js"
export * as MediaStoreRegistryContract from "./MediaStoreRegistryContract.js"
export * as OperatorViewsContract from "./OperatorViewsContract.js"
export * as ProcessRegistryContract from "./ProcessRegistryContract.js"
export * as RateLimitStoreContract from "./RateLimitStoreContract.js"
export * as SaveAllContract from "./SaveAllContract.js"
export * as SecretStoreContract from "./SecretStoreContract.js"
export * as SigningKeyStoreContract from "./SigningKeyStoreContract.js"
export * as StorageContract from "./StorageContract.js"
export * as WebhookOutboxContract from "./WebhookOutboxContract.js"
/** The suites' fixed ids and seeded owner, for an adapter's tests of its own. */
export { type Owner, queued, seedOwner, uuid } from "../internal/StorageFixtures.js"
