/**
 * In-memory `RateLimitStore`: core's (`@appexec/core` `MemoryRateLimitStore`), which
 * `appexec serve` uses too, so that the contract suites cover it.
 */
import { MemoryRateLimitStore } from "@appexec/core"

/** A fresh rate-limit store. */
export const make = MemoryRateLimitStore.make

/** Layer of a fresh in-memory rate-limit store. */
export const layer = MemoryRateLimitStore.layer
