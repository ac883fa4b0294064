import { MemoryStorage } from "@appexec/testing"
import { StorageContract } from "@appexec/testing/contracts"

StorageContract.suite("memory", () => MemoryStorage.layer)
