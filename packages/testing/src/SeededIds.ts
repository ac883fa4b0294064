/**
 * A deterministic `IdGenerator`: the same seed gives the same ids in the same order.
 */
import { IdGenerator } from "@appexec/core"
import { Effect, Layer } from "effect"
import { createHash } from "node:crypto"

const digest = (seed: string, n: number) => createHash("sha256").update(`${seed}:${n}`).digest()

/** Ids and tokens drawn from SHA-256 of `seed` and a counter; UUIDs are version 4 in form. */
export const make = (seed = "appexec") =>
  Effect.sync((): IdGenerator.IdGenerator["Type"] => {
    let n = 0
    return {
      uuid: Effect.sync(() => {
        const hex = digest(seed, n++).toString("hex")
        const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)
        return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${
          hex.slice(20, 32)
        }`
      }),
      token: (bytes) =>
        Effect.sync(() => {
          const chunks: Array<Buffer> = []
          while (chunks.length * 32 < bytes) chunks.push(digest(`${seed}/token`, n++))
          return Buffer.concat(chunks).subarray(0, bytes).toString("base64url")
        })
    }
  })

/** Layer of a seeded id generator. */
export const layer = (seed?: string) => Layer.effect(IdGenerator.IdGenerator, make(seed))
