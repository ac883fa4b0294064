/**
 * `AppStore` on SQL, for every dialect: `apps` (one row per app, pointing at its current version)
 * and `workflow_versions` (immutable definitions, JSON). Search is the dialect's
 * (`SqlDialect.search`): a plain substring test of the folded name and description.
 */
import { AppStore } from "@appexec/core"
import { Effect, Layer, Option } from "effect"
import * as PreparedQuery from "./PreparedQuery.js"
import { appColumns, appOfRow, type AppRow, decode, parseJson } from "./RowMapping.js"
import { SqlRunner } from "./SqlRunner.js"

const decodeVersion = decode(AppStore.WorkflowVersion, "read workflow version")

const appsOf = (rows: ReadonlyArray<AppRow>) => rows.map(appOfRow)

/** The app store over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const { builder: db, dialect } = runner
  const apps = db.selectFrom("apps").select(appColumns)
  // Every start and every app request reads its app: compiled once.
  const byId = PreparedQuery.make((p: PreparedQuery.Param<{ appId: string }>) => apps.where("app_id", "=", p("appId")))
  const ordered = apps.orderBy("name").orderBy("app_id")
  // Every listing without a search, the common one, runs two statements compiled once.
  const ownApps = PreparedQuery.make((p: PreparedQuery.Param<{ workspaceId: string }>) =>
    ordered.where("workspace_id", "=", p("workspaceId"))
  )
  const othersApps = PreparedQuery.make((p: PreparedQuery.Param<{ workspaceId: string; limit: number }>) =>
    ordered
      .where("is_public", "=", dialect.bool(true))
      .where((eb) => eb.or([eb("workspace_id", "is", null), eb("workspace_id", "!=", p("workspaceId"))]))
      .limit(p("limit"))
  )
  const matching = (search: string | undefined) =>
    search === undefined ? ordered : ordered.where(dialect.search.matches(search.toLowerCase()))

  const service: AppStore.AppStore["Type"] = {
    save: Effect.fn("SqlAppStore.save")((app, version) => {
      const columns = {
        name: app.name,
        description: app.description,
        ...dialect.search.columns(app),
        is_public: dialect.bool(app.isPublic),
        workspace_id: app.workspaceId,
        workflow_id: app.workflowId,
        created_at: app.createdAt,
        updated_at: app.updatedAt
      }
      return runner.transaction("save app", [
        db
          .insertInto("apps")
          .values({ app_id: app.appId, ...columns })
          .onConflict((oc) => oc.column("app_id").doUpdateSet(columns)),
        db
          .insertInto("workflow_versions")
          .values({
            workflow_id: version.workflowId,
            app_id: version.appId,
            definition: JSON.stringify(version.definition),
            created_at: version.createdAt
          })
          .onConflict((oc) => oc.column("workflow_id").doNothing())
      ]).pipe(Effect.asVoid)
    }),
    // Every app request and every start reads one: untraced.
    get: (appId) =>
      Effect.map(
        runner.first("get app", byId.bind({ appId })),
        (row) => Option.map(Option.fromNullable(row), appOfRow)
      ),
    findByName: Effect.fn("SqlAppStore.findByName")((workspaceId, name) =>
      runner
        .first(
          "find app by name",
          ordered
            .where((eb) => workspaceId === null ? eb("workspace_id", "is", null) : eb("workspace_id", "=", workspaceId))
            .where("name", "=", name)
            .limit(1)
        )
        .pipe(Effect.map((row) => Option.map(Option.fromNullable(row), appOfRow)))
    ),
    getVersion: Effect.fn("SqlAppStore.getVersion")(function*(workflowId) {
      const row = yield* runner.first(
        "get workflow version",
        db.selectFrom("workflow_versions").selectAll().where("workflow_id", "=", workflowId)
      )
      if (row === undefined) return Option.none()
      const definition = yield* parseJson(row.definition, "read workflow version")
      return Option.some(
        yield* decodeVersion({ workflowId: row.workflow_id, appId: row.app_id, definition, createdAt: row.created_at })
      )
    }),
    list: Effect.fn("SqlAppStore.list")(function*({ publicLimit, search, workspaceId }) {
      const limit = Math.max(0, publicLimit)
      if (workspaceId !== null && search === undefined) {
        const own = yield* runner.all("list apps", ownApps.bind({ workspaceId }))
        const others = yield* runner.all("list apps", othersApps.bind({ workspaceId, limit }))
        return { workspace: appsOf(own), public: appsOf(others) }
      }
      const own = workspaceId === null
        ? []
        : yield* runner.all("list apps", matching(search).where("workspace_id", "=", workspaceId))
      const others = yield* runner.all(
        "list apps",
        matching(search)
          .where("is_public", "=", dialect.bool(true))
          .where((eb) =>
            workspaceId === null
              ? eb.lit(true)
              : eb.or([eb("workspace_id", "is", null), eb("workspace_id", "!=", workspaceId)])
          )
          .limit(limit)
      )
      return { workspace: appsOf(own), public: appsOf(others) }
    }),
    listAll: Effect.map(runner.all("list all apps", ordered), appsOf),
    listVersions: Effect.flatMap(
      runner.all("list workflow versions", db.selectFrom("workflow_versions").selectAll().orderBy("created_at")),
      (rows) =>
        Effect.forEach(rows, (row) =>
          Effect.flatMap(
            parseJson(row.definition, "read workflow version"),
            (definition) =>
              decodeVersion({ workflowId: row.workflow_id, appId: row.app_id, definition, createdAt: row.created_at })
          ))
    )
  }
  return service
})

/** Layer of the app store; needs the runner of an adapter. */
export const layer = Layer.effect(AppStore.AppStore, make)
