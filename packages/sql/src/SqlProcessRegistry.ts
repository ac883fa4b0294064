/**
 * `ProcessRegistry` on SQL, for every dialect: the `processes` table, one row per process of
 * the deployment, written at its start, beaten on, and deleted as it stops.
 */
import { ProcessRegistry } from "@appexec/core"
import { Effect, Layer, Schema } from "effect"
import type { Selectable } from "kysely"
import { SqlRunner } from "./SqlRunner.js"
import type { ProcessesTable } from "./SqlTables.js"

const isRole = Schema.is(ProcessRegistry.Role)

/** A row as the port answers it; a role this version does not know reads as `embedded`. */
const entryOfRow = (row: Selectable<ProcessesTable>) =>
  new ProcessRegistry.ProcessEntry({
    processId: row.process_id,
    name: row.name,
    role: isRole(row.role) ? row.role : "embedded",
    version: row.version,
    startedAt: Number(row.started_at),
    heartbeatAt: Number(row.heartbeat_at),
    expiresAt: Number(row.expires_at),
    // Absent, not null, for a process that runs no worker: as it was written.
    ...(row.node_types === null ? {} : { nodeTypes: JSON.parse(row.node_types) as ReadonlyArray<string> })
  })

/** The registry over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const db = runner.builder
  const service: ProcessRegistry.ProcessRegistry["Type"] = {
    beat: Effect.fn("SqlProcessRegistry.beat")((entry) =>
      runner.run(
        "process heartbeat",
        db
          .insertInto("processes")
          .values({
            process_id: entry.processId,
            name: entry.name,
            role: entry.role,
            version: entry.version,
            started_at: entry.startedAt,
            heartbeat_at: entry.heartbeatAt,
            expires_at: entry.expiresAt,
            node_types: entry.nodeTypes == null ? null : JSON.stringify(entry.nodeTypes)
          })
          .onConflict((oc) =>
            oc.column("process_id").doUpdateSet({ heartbeat_at: entry.heartbeatAt, expires_at: entry.expiresAt })
          )
      ).pipe(Effect.asVoid)
    ),
    remove: Effect.fn("SqlProcessRegistry.remove")((processId) =>
      runner.run("remove process", db.deleteFrom("processes").where("process_id", "=", processId)).pipe(
        Effect.map((deleted) => deleted > 0)
      )
    ),
    list: runner.all(
      "list processes",
      db.selectFrom("processes").selectAll().orderBy("name").orderBy("started_at").orderBy("process_id")
    ).pipe(Effect.map((rows) => rows.map(entryOfRow))),
    prune: Effect.fn("SqlProcessRegistry.prune")((before) =>
      runner.run("prune processes", db.deleteFrom("processes").where("expires_at", "<", before))
    )
  }
  return service
})

/** Layer of the registry; needs the runner of an adapter. */
export const layer = Layer.effect(ProcessRegistry.ProcessRegistry, make)
