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
import * as ExecutionPagesContract from "./ExecutionPagesContract.js"
import * as ExecutionQueueContract from "./ExecutionQueueContract.js"
import * as ExecutionReportsContract from "./ExecutionReportsContract.js"
import * as ExecutionStoreContract from "./ExecutionStoreContract.js"
import * as KeyStoreContract from "./KeyStoreContract.js"
import * as OperatorViewsContract from "./OperatorViewsContract.js"
import * as RateLimitStoreContract from "./RateLimitStoreContract.js"
import * as SecretStoreContract from "./SecretStoreContract.js"
import * as SigningKeyStoreContract from "./SigningKeyStoreContract.js"
import * as WebhookOutboxContract from "./WebhookOutboxContract.js"

export type { MakeStorage }

/** Runs every port contract against fresh storage from `makeStorage` for every test. */
export const suite = (name: string, makeStorage: MakeStorage) => {
  AppStoreContract.suite(name, makeStorage)
  ExecutionStoreContract.suite(name, makeStorage)
  ExecutionPagesContract.suite(name, makeStorage)
  ExecutionQueueContract.suite(name, makeStorage)
  ExecutionReportsContract.suite(name, makeStorage)
  CancelAndIdempotencyContract.suite(name, makeStorage)
  WebhookOutboxContract.suite(name, makeStorage)
  OperatorViewsContract.suite(name, makeStorage)
  KeyStoreContract.suite(name, makeStorage)
  BlobStoreContract.suite(name, makeStorage)
  SigningKeyStoreContract.suite(name, makeStorage)
  RateLimitStoreContract.suite(name, makeStorage)
  SecretStoreContract.suite(name, makeStorage)
}
