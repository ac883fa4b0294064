import { MemoryStorage } from "@appexec/testing"
import { SaveAllContract, StorageContract } from "@appexec/testing/contracts"

StorageContract.suite("memory", () => MemoryStorage.layer)
SaveAllContract.suite("memory", () => MemoryStorage.layer)
