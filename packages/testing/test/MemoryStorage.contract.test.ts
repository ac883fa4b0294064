import { MemoryStorage } from "@appexec/testing"
import { MediaStoreRegistryContract, SaveAllContract, StorageContract } from "@appexec/testing/contracts"

StorageContract.suite("memory", () => MemoryStorage.layer)
SaveAllContract.suite("memory", () => MemoryStorage.layer)
MediaStoreRegistryContract.suite("memory", () => MemoryStorage.layer)
