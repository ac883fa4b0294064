/**
 * In-memory `ProcessRegistry`: the rows of the processes by process id, fresh and empty each
 * time the layer is built.
 */
import { ProcessRegistry } from "@appexec/core"
import { Effect, Layer } from "effect"

const order = (a: ProcessRegistry.ProcessEntry, b: ProcessRegistry.ProcessEntry) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : a.startedAt - b.startedAt ||
    (a.processId < b.processId ? -1 : a.processId > b.processId ? 1 : 0)

/** A fresh registry in memory. */
export const make = Effect.sync((): ProcessRegistry.ProcessRegistry["Type"] => {
  const rows = new Map<string, ProcessRegistry.ProcessEntry>()
  return {
    beat: (entry) =>
      Effect.sync(() => {
        const known = rows.get(entry.processId)
        rows.set(
          entry.processId,
          known === undefined
            ? entry
            : new ProcessRegistry.ProcessEntry({
              ...known,
              heartbeatAt: entry.heartbeatAt,
              expiresAt: entry.expiresAt
            })
        )
      }),
    remove: (processId) => Effect.sync(() => rows.delete(processId)),
    list: Effect.sync(() => [...rows.values()].sort(order)),
    prune: (before) =>
      Effect.sync(() => {
        let pruned = 0
        for (const [id, entry] of rows) {
          if (entry.expiresAt < before) {
            rows.delete(id)
            pruned += 1
          }
        }
        return pruned
      })
  }
})

/** Layer of a fresh registry in memory. */
export const layer = Layer.effect(ProcessRegistry.ProcessRegistry, make)
