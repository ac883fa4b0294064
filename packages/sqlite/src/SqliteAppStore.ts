/**
 * `AppStore` on SQLite: `apps` (one row per app, pointing at its current version) and
 * `workflow_versions` (immutable definitions, JSON).
 */
import { AppStore, type Errors } from "@appexec/core"
import { Effect, type Either, Layer, Option } from "effect"
import type { Selectable } from "kysely"
import * as PreparedQuery from "./internal/PreparedQuery.js"
import { decode, parseJson } from "./internal/RowDecoding.js"
import type { AppsTable } from "./internal/Tables.js"
import { FOLD, SqliteClient } from "./SqliteClient.js"

const decodeApp = decode(AppStore.AppRecord, "read app")
const decodeVersion = decode(AppStore.WorkflowVersion, "read workflow version")

const fromRow = (row: Selectable<AppsTable>): Either.Either<AppStore.AppRecord, Errors.StorageError> =>
  decodeApp({
    appId: row.app_id,
    name: row.name,
    description: row.description,
    isPublic: row.is_public === 1,
    workspaceId: row.workspace_id,
    workflowId: row.workflow_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at
  })

const fromRows = (rows: ReadonlyArray<Selectable<AppsTable>>) => Effect.forEach(rows, fromRow)

/** The app store over the instance's connection. */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient
  const db = client.builder
  const apps = db.selectFrom("apps").selectAll()
  // Every start and every app request reads its app: compiled once.
  const byId = PreparedQuery.make((p: PreparedQuery.Param<{ appId: string }>) => apps.where("app_id", "=", p("appId")))
  const ordered = apps.orderBy("name").orderBy("app_id")
  // `instr(fold(…))` is a plain substring test, case-insensitive in all of Unicode, with no LIKE wildcards.
  const matching = (search: string | undefined) => {
    if (search === undefined) return ordered
    const needle = search.toLowerCase()
    return ordered.where((eb) =>
      eb.or([
        eb(eb.fn("instr", [eb.fn(FOLD, ["name"]), eb.val(needle)]), ">", 0),
        eb(eb.fn("instr", [eb.fn(FOLD, ["description"]), eb.val(needle)]), ">", 0)
      ])
    )
  }

  const service: AppStore.AppStore["Type"] = {
    save: Effect.fn("SqliteAppStore.save")((app, version) =>
      client.transaction("save app", (c) => {
        const columns = {
          name: app.name,
          description: app.description,
          is_public: app.isPublic ? 1 : 0,
          workspace_id: app.workspaceId,
          workflow_id: app.workflowId,
          created_at: app.createdAt,
          updated_at: app.updatedAt
        }
        c.run(
          db
            .insertInto("apps")
            .values({ app_id: app.appId, ...columns })
            .onConflict((oc) => oc.column("app_id").doUpdateSet(columns))
        )
        c.run(
          db
            .insertInto("workflow_versions")
            .values({
              workflow_id: version.workflowId,
              app_id: version.appId,
              definition: JSON.stringify(version.definition),
              created_at: version.createdAt
            })
            .onConflict((oc) => oc.column("workflow_id").doNothing())
        )
      })
    ),
    get: Effect.fn("SqliteAppStore.get")((appId) =>
      client
        .execute("get app", (c) => c.get(byId.bind({ appId })))
        .pipe(Effect.flatMap((row) => (row === undefined ? Effect.succeedNone : Effect.asSome(fromRow(row)))))
    ),
    findByName: Effect.fn("SqliteAppStore.findByName")((workspaceId, name) =>
      client
        .execute("find app by name", (c) =>
          c.get(ordered.where("workspace_id", "is", workspaceId).where("name", "=", name).limit(1)))
        .pipe(Effect.flatMap((row) => (row === undefined ? Effect.succeedNone : Effect.asSome(fromRow(row)))))
    ),
    getVersion: Effect.fn("SqliteAppStore.getVersion")((workflowId) =>
      client
        .execute("get workflow version", (c) =>
          c.get(db.selectFrom("workflow_versions").selectAll().where("workflow_id", "=", workflowId)))
        .pipe(
          Effect.flatMap((row) =>
            row === undefined
              ? Effect.succeedNone
              : parseJson(row.definition, "read workflow version").pipe(
                Effect.flatMap((definition) =>
                  decodeVersion({
                    workflowId: row.workflow_id,
                    appId: row.app_id,
                    definition,
                    createdAt: row.created_at
                  })
                ),
                Effect.map(Option.some)
              )
          )
        )
    ),
    list: Effect.fn("SqliteAppStore.list")(({ workspaceId, search, publicLimit }) =>
      Effect.gen(function*() {
        const { own, others } = yield* client.execute("list apps", (c) => ({
          own: workspaceId === null ? [] : c.all(matching(search).where("workspace_id", "=", workspaceId)),
          others: c.all(
            matching(search)
              .where("is_public", "=", 1)
              .where((eb) =>
                workspaceId === null
                  ? eb.lit(true)
                  : eb.or([eb("workspace_id", "is", null), eb("workspace_id", "!=", workspaceId)])
              )
              .limit(Math.max(0, publicLimit))
          )
        }))
        return { workspace: yield* fromRows(own), public: yield* fromRows(others) }
      })
    ),
    listAll: client.execute("list all apps", (c) => c.all(ordered)).pipe(Effect.flatMap(fromRows))
  }
  return service
})

/** Layer of the app store; needs the connection (see `SqliteStorage`). */
export const layer = Layer.effect(AppStore.AppStore, make)
