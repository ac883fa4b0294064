/**
 * `SealedSecretStore` on SQL, for every dialect: the `operator_secrets` table, one row per name
 * and scope (`workspace_id` '' for the instance). The values arrive sealed and are kept as given.
 */
import { Ids } from "@appexec/api"
import { SealedSecretStore } from "@appexec/core"
import { Effect, Layer } from "effect"
import type { Selectable } from "kysely"
import { trusted } from "./RowMapping.js"
import { SqlRunner } from "./SqlRunner.js"
import type { OperatorSecretsTable } from "./SqlTables.js"

/** The instance's scope in the `workspace_id` column. */
const INSTANCE = ""

const scopeColumn = (workspaceId: string | undefined) => workspaceId ?? INSTANCE

const secretOfRow = (row: Selectable<OperatorSecretsTable>): SealedSecretStore.SealedSecret => ({
  name: row.name,
  workspaceId: row.workspace_id === INSTANCE ? undefined : Ids.WorkspaceId.make(row.workspace_id, trusted),
  sealed: row.sealed,
  updatedAt: Number(row.updated_at)
})

/** The sealed-secret store over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const db = runner.builder
  const columns = ["name", "workspace_id", "sealed", "updated_at"] as const
  const service: SealedSecretStore.SealedSecretStore["Type"] = {
    put: Effect.fn("SqlSealedSecretStore.put")((secret) =>
      runner.run(
        "put secret",
        db
          .insertInto("operator_secrets")
          .values({
            name: secret.name,
            workspace_id: scopeColumn(secret.workspaceId),
            sealed: secret.sealed,
            updated_at: secret.updatedAt
          })
          .onConflict((oc) =>
            oc.columns(["name", "workspace_id"]).doUpdateSet({ sealed: secret.sealed, updated_at: secret.updatedAt })
          )
      ).pipe(Effect.asVoid)
    ),
    reseal: Effect.fn("SqlSealedSecretStore.reseal")((name, workspaceId, expected, sealed) =>
      runner.run(
        "reseal secret",
        db
          .updateTable("operator_secrets")
          .set({ sealed })
          .where("name", "=", name)
          .where("workspace_id", "=", scopeColumn(workspaceId))
          .where("sealed", "=", expected)
      ).pipe(Effect.map((changed) => changed > 0))
    ),
    find: Effect.fn("SqlSealedSecretStore.find")((name, workspaceId) =>
      runner.all(
        "find secret",
        db
          .selectFrom("operator_secrets")
          .select(columns)
          .where("name", "=", name)
          .where("workspace_id", "in", [workspaceId, INSTANCE])
      ).pipe(Effect.map((rows) => rows.map(secretOfRow)))
    ),
    list: runner.all("list secrets", db.selectFrom("operator_secrets").select(columns)).pipe(
      Effect.map((rows) => rows.map(secretOfRow))
    ),
    delete: Effect.fn("SqlSealedSecretStore.delete")((name, workspaceId) =>
      runner.run(
        "delete secret",
        db
          .deleteFrom("operator_secrets")
          .where("name", "=", name)
          .where("workspace_id", "=", scopeColumn(workspaceId))
      ).pipe(Effect.map((deleted) => deleted > 0))
    )
  }
  return service
})

/** Layer of the sealed-secret store; needs the runner of an adapter. */
export const layer = Layer.effect(SealedSecretStore.SealedSecretStore, make)
