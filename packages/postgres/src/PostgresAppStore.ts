/**
 * `AppStore` on PostgreSQL: `apps` (one row per app, pointing at its current version) and
 * `workflow_versions` (immutable definitions, JSON). Search runs on `search_text`, the name and
 * description folded here with `toLowerCase` (all of Unicode, whatever the server's collation),
 * as a plain substring test (`strpos`, no LIKE wildcards).
 */
import { AppStore, type Errors } from "@appexec/core"
import { Effect, type Either, Layer, Option } from "effect"
import type { Selectable } from "kysely"
import { decode, parseJson } from "./internal/RowDecoding.js"
import type { AppsTable } from "./internal/Tables.js"
import { PostgresClient } from "./PostgresClient.js"

const decodeApp = decode(AppStore.AppRecord, "read app")
const decodeVersion = decode(AppStore.WorkflowVersion, "read workflow version")

const fromRow = (row: Selectable<AppsTable>): Either.Either<AppStore.AppRecord, Errors.StorageError> =>
  decodeApp({
    appId: row.app_id,
    name: row.name,
    description: row.description,
    isPublic: row.is_public,
    workspaceId: row.workspace_id,
    workflowId: row.workflow_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at
  })

/** Every column of `apps` by name (a prepared statement lists them, see `PostgresClient.prepared`). */
const appColumns = [
  "app_id",
  "name",
  "description",
  "search_text",
  "is_public",
  "workspace_id",
  "workflow_id",
  "created_at",
  "updated_at"
] as const satisfies ReadonlyArray<keyof AppsTable>

const fromRows = (rows: ReadonlyArray<Selectable<AppsTable>>) => Effect.forEach(rows, fromRow)

/** What search looks in: name and description, folded, on separate lines (no match spans both). */
const searchText = (app: AppStore.AppRecord) => `${app.name}\n${app.description ?? ""}`.toLowerCase()

/** The app store over the instance's pool. */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const ordered = (db: PostgresClient["Type"]["db"]) =>
    db.selectFrom("apps").selectAll().orderBy("name").orderBy("app_id")
  const matching = (db: PostgresClient["Type"]["db"], search: string | undefined) =>
    search === undefined
      ? ordered(db)
      : ordered(db).where((eb) => eb(eb.fn("strpos", ["search_text", eb.val(search.toLowerCase())]), ">", 0))
  const optionalApp = (row: Selectable<AppsTable> | undefined) =>
    row === undefined ? Effect.succeedNone : Effect.asSome(fromRow(row))

  const service: AppStore.AppStore["Type"] = {
    save: Effect.fn("PostgresAppStore.save")((app, version) =>
      client.transaction("save app", async (trx) => {
        const columns = {
          name: app.name,
          description: app.description,
          search_text: searchText(app),
          is_public: app.isPublic,
          workspace_id: app.workspaceId,
          workflow_id: app.workflowId,
          created_at: app.createdAt,
          updated_at: app.updatedAt
        }
        await trx
          .insertInto("apps")
          .values({ app_id: app.appId, ...columns })
          .onConflict((oc) => oc.column("app_id").doUpdateSet(columns))
          .execute()
        await trx
          .insertInto("workflow_versions")
          .values({
            workflow_id: version.workflowId,
            app_id: version.appId,
            definition: JSON.stringify(version.definition),
            created_at: version.createdAt
          })
          .onConflict((oc) => oc.column("workflow_id").doNothing())
          .execute()
      })
    ),
    get: Effect.fn("PostgresAppStore.get")((appId) =>
      client
        // Every start reads its app: a prepared statement.
        .prepared(
          "get app",
          client.db.selectFrom("apps").select(appColumns).where("app_id", "=", appId).compile()
        )
        .pipe(Effect.flatMap(({ rows: [row] }) => optionalApp(row)))
    ),
    findByName: Effect.fn("PostgresAppStore.findByName")((workspaceId, name) =>
      client
        .execute("find app by name", (db) =>
          ordered(db)
            .where((eb) => workspaceId === null ? eb("workspace_id", "is", null) : eb("workspace_id", "=", workspaceId))
            .where("name", "=", name)
            .limit(1)
            .executeTakeFirst())
        .pipe(Effect.flatMap(optionalApp))
    ),
    getVersion: Effect.fn("PostgresAppStore.getVersion")((workflowId) =>
      client
        .execute("get workflow version", (db) =>
          db.selectFrom("workflow_versions").selectAll().where("workflow_id", "=", workflowId).executeTakeFirst())
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
    list: Effect.fn("PostgresAppStore.list")(({ workspaceId, search, publicLimit }) =>
      Effect.gen(function*() {
        const [own, others] = yield* client.execute("list apps", (db) =>
          Promise.all([
            workspaceId === null ? [] : matching(db, search).where("workspace_id", "=", workspaceId).execute(),
            matching(db, search)
              .where("is_public", "=", true)
              .where((eb) =>
                workspaceId === null
                  ? eb.lit(true)
                  : eb.or([eb("workspace_id", "is", null), eb("workspace_id", "!=", workspaceId)])
              )
              .limit(Math.max(0, publicLimit))
              .execute()
          ]))
        return { workspace: yield* fromRows(own), public: yield* fromRows(others) }
      })
    ),
    listAll: client.execute("list all apps", (db) => ordered(db).execute()).pipe(Effect.flatMap(fromRows))
  }
  return service
})

/** Layer of the app store; needs the pool (see `PostgresStorage`). */
export const layer = Layer.effect(AppStore.AppStore, make)
