import { MediaStoreRegistryContract, SaveAllContract, StorageContract } from "@appexec/testing/contracts"
import * as TestDatabase from "./support/TestDatabase.js"

const database = TestDatabase.create("contracts")

StorageContract.suite("postgres", TestDatabase.freshStorage(database))
StorageContract.suite("postgres, one connection", TestDatabase.freshStorage(database, { poolSize: 1 }))
SaveAllContract.suite("postgres", TestDatabase.freshStorage(database))
MediaStoreRegistryContract.suite("postgres", TestDatabase.freshStorage(database))
