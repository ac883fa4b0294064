import { SqliteStorage } from "@appexec/sqlite"
import { MediaStoreRegistryContract, SaveAllContract, StorageContract } from "@appexec/testing/contracts"
import { Effect, Layer } from "effect"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A fresh database file in its own temporary directory, removed with the layer. */
const tempStorage = () =>
  Layer.unwrapScoped(
    Effect.map(
      Effect.acquireRelease(
        Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-sqlite-"))),
        (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
      ),
      (dir) => SqliteStorage.layer({ filename: join(dir, "appexec.db") })
    )
  )

StorageContract.suite("sqlite file", tempStorage)
StorageContract.suite("sqlite :memory:", () => SqliteStorage.layer({ filename: ":memory:" }))
SaveAllContract.suite("sqlite file", tempStorage)
MediaStoreRegistryContract.suite("sqlite file", tempStorage)
