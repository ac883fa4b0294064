/**
 * Every port contract at once: what a storage adapter (one layer providing every storage port)
 * must pass.
 *
 * ```ts
 * StorageContract.suite("sqlite", () => SqliteStorage.layer({ filename: tempFile() }))
 * ```
 */
import type { MakeStorage } from "../internal/StorageFixtures.js"
import * as AppStoreContract from "./AppStoreContract.js"
import * as BlobStoreContract from "./BlobStoreContract.js"
import * as CancelAndIdempotencyContract from "./CancelAndIdempotencyContract.js"
import * as CapacityContract from "./CapacityContract.js"
import * as ExecutionPagesContract from "./ExecutionPagesContract.js"
import * as ExecutionQueueContract from "./ExecutionQueueContract.js"
import * as ExecutionReportsContract from "./ExecutionReportsContract.js"
import * as ExecutionStoreContract from "./ExecutionStoreContract.js"
import * as KeyStoreContract from "./KeyStoreContract.js"
import * as OperatorViewsContract from "./OperatorViewsContract.js"
import * as ProcessRegistryContract from "./ProcessRegistryContract.js"
import * as RateLimitStoreContract from "./RateLimitStoreContract.js"
import * as SecretStoreContract from "./SecretStoreContract.js"
import * as SigningKeyStoreContract from "./SigningKeyStoreContract.js"
import * as WebhookOutboxContract from "./WebhookOutboxContract.js"

export type { MakeStorage }

/** Every port contract, in the order they run. */
const suites = [
  AppStoreContract.suite,
  ExecutionStoreContract.suite,
  ExecutionPagesContract.suite,
  ExecutionQueueContract.suite,
  CapacityContract.suite,
  ExecutionReportsContract.suite,
  CancelAndIdempotencyContract.suite,
  WebhookOutboxContract.suite,
  OperatorViewsContract.suite,
  ProcessRegistryContract.suite,
  KeyStoreContract.suite,
  BlobStoreContract.suite,
  SigningKeyStoreContract.suite,
  RateLimitStoreContract.suite,
  SecretStoreContract.suite
] as const

/** Runs every port contract against fresh storage from `makeStorage` for every test. */
export const suite = (name: string, makeStorage: MakeStorage) => {
  for (const run of suites) run(name, makeStorage)
}
