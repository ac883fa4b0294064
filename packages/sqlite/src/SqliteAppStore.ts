/**
 * `AppStore` on SQLite: `apps` (one row per app, pointing at its current version) and
 * `workflow_versions` (immutable definitions, JSON).
 */
import { AppStore, type Errors, KeyStore } from "@appexec/core"
import { Effect, Either, Layer, Option } from "effect"
import { type Compilable, CompiledQuery, type Selectable } from "kysely"
import * as PreparedQuery from "./internal/PreparedQuery.js"
import { decode, parseJson } from "./internal/RowDecoding.js"
import type { AppsTable } from "./internal/Tables.js"
import { type Connection, FOLD, SqliteClient } from "./SqliteClient.js"

const decodeVersion = decode(AppStore.WorkflowVersion, "read workflow version")

/** Most apps the store keeps as read (see `cache` below). */
const APP_CACHE_SIZE = 1_000

const fields = AppStore.AppRecord.fields
const trusted = { disableValidation: true } as const
const workspaceId = KeyStore.WorkspaceRecord.fields.workspaceId.make

/**
 * The record a row holds. Rows are written by `save` alone, from records the domain schema typed,
 * so they are read back without decoding them again: the ids keep their brands unchecked.
 */
const fromRow = (row: Selectable<AppsTable>): Either.Either<AppStore.AppRecord, Errors.StorageError> =>
  Either.right({
    appId: fields.appId.make(row.app_id, trusted),
    name: row.name,
    description: row.description,
    isPublic: row.is_public === 1,
    workspaceId: row.workspace_id === null ? null : workspaceId(row.workspace_id, trusted),
    workflowId: fields.workflowId.make(row.workflow_id, trusted),
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
  const ownApps = PreparedQuery.make((p: PreparedQuery.Param<{ workspaceId: string }>) =>
    ordered.where("workspace_id", "=", p("workspaceId"))
  )
  const othersApps = PreparedQuery.make((p: PreparedQuery.Param<{ workspaceId: string; limit: number }>) =>
    ordered
      .where("is_public", "=", 1)
      .where((eb) => eb.or([eb("workspace_id", "is", null), eb("workspace_id", "!=", p("workspaceId"))]))
      .limit(p("limit"))
  )
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

  /**
   * Apps as last read, while no other connection has committed anything since (`PRAGMA
   * data_version` moves with every commit of another connection, in this process or another,
   * and not with this connection's own): every start reads its app, and checking the version
   * costs a third of reading the row. This connection's own writes to `apps` (`save`, the only
   * one) empty it. At most `APP_CACHE_SIZE` apps, the oldest read dropped first.
   */
  const cache = new Map<string, Selectable<AppsTable>>()
  let cachedVersion: number | undefined
  const dataVersion: Compilable<{ readonly data_version: number }> = {
    compile: () => CompiledQuery.raw("PRAGMA data_version")
  }
  const cachedRow = (c: Connection, appId: string) => {
    const version = c.get(dataVersion)?.data_version
    if (version !== cachedVersion) {
      cache.clear()
      cachedVersion = version
    }
    const cached = cache.get(appId)
    if (cached !== undefined) return cached
    const row = c.get(byId.bind({ appId }))
    if (row !== undefined) {
      cache.set(appId, row)
      if (cache.size > APP_CACHE_SIZE) cache.delete(cache.keys().next().value!)
    }
    return row
  }

  const service: AppStore.AppStore["Type"] = {
    save: Effect.fn("SqliteAppStore.save")((app, version) =>
      client.transaction("save app", (c) => {
        cache.clear()
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
    // Every app request and every start reads one: untraced.
    get: (appId) =>
      client
        .execute("get app", (c) => cachedRow(c, appId))
        .pipe(Effect.flatMap((row) => (row === undefined ? Effect.succeedNone : Effect.asSome(fromRow(row))))),
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
    // Every listing without a search, the common one, runs two statements compiled once.
    list: ({ workspaceId, search, publicLimit }) =>
      Effect.gen(function*() {
        const { own, others } = yield* client.execute("list apps", (c) =>
          workspaceId !== null && search === undefined
            ? {
              own: c.all(ownApps.bind({ workspaceId })),
              others: c.all(othersApps.bind({ workspaceId, limit: Math.max(0, publicLimit) }))
            }
            : {
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
            })
        return { workspace: yield* fromRows(own), public: yield* fromRows(others) }
      }),
    listAll: client.execute("list all apps", (c) => c.all(ordered)).pipe(Effect.flatMap(fromRows))
  }
  return service
})

/** Layer of the app store; needs the connection (see `SqliteStorage`). */
export const layer = Layer.effect(AppStore.AppStore, make)
