/** App reads and imports of the facade (docs/api.md#list-apps, docs/apps.md). */
import { Api, type Authentication } from "@appexec/api"
import type { AppDetail, AppSummary, WorkflowGraph } from "@appexec/api/App"
import { Effect } from "effect"
import { parameterIdOf } from "../../AppDefinition.js"
import { type AppRecord, AppStore } from "../../AppStore.js"
import { InvalidRequest } from "../../Errors.js"
import { AppCatalog, type ImportOptions } from "./AppCatalog.js"
import type { Visibility } from "./Visibility.js"
import { graphOf } from "./WorkflowGraph.js"

type Principal = Authentication.Principal

/** Default and bounds of the list `limit`. */
export const LIST_LIMIT = Api.LIST_LIMIT

const summaryOf = (app: AppRecord): AppSummary => ({
  appId: app.appId,
  name: app.name,
  description: app.description,
  isPublic: app.isPublic
})

/** The apps part of the facade, over the reads of `visibility`. */
export const make = (visibility: Visibility) =>
  Effect.gen(function*() {
    const appStore = yield* AppStore
    const catalog = yield* AppCatalog
    const { visibleWorkflow } = visibility
    return {
      import: Effect.fn("Appexec.apps.import")((definition: unknown, options?: ImportOptions) =>
        Effect.map(catalog.import(definition, options), summaryOf)
      ),
      // Hot paths (every listing, every app read): untraced.
      list: Effect.fnUntraced(function*(
        principal: Principal,
        query: { readonly search?: string | undefined; readonly limit?: number | undefined } = {}
      ) {
        const limit = query.limit ?? LIST_LIMIT.default
        if (!Number.isInteger(limit) || limit < LIST_LIMIT.min || limit > LIST_LIMIT.max) {
          return yield* new InvalidRequest({
            reason: `\`limit\` must be an integer from ${LIST_LIMIT.min} to ${LIST_LIMIT.max}.`
          })
        }
        const search = query.search?.trim()
        const listing = yield* appStore.list({
          workspaceId: principal.workspaceId,
          search: search === "" ? undefined : search,
          publicLimit: limit
        })
        return [...listing.workspace, ...listing.public].map(summaryOf)
      }),
      listAll: appStore.listAll,
      get: Effect.fnUntraced(function*(principal: Principal, appId: string) {
        const { app, compiled } = yield* visibleWorkflow(principal, appId)
        const detail: AppDetail = {
          appId: app.appId,
          name: app.name,
          description: app.description ?? "",
          parameters: compiled.parameters.map((p) => ({
            id: parameterIdOf(app.appId, p.nodeId),
            name: p.name,
            type: p.type,
            required: p.required,
            ...(p.accept === undefined ? {} : { accept: p.accept }),
            ...(p.options === undefined ? {} : { options: p.options }),
            ...(p.default === undefined ? {} : { default: p.default }),
            ...(p.label === undefined ? {} : { label: p.label }),
            ...(p.description === undefined ? {} : { description: p.description }),
            ...(p.example === undefined ? {} : { example: p.example }),
            ...(p.multiline === true ? { multiline: true } : {})
          }))
        }
        return detail
      }),
      workflow: Effect.fn("Appexec.apps.workflow")(function*(principal: Principal, appId: string) {
        const { app, compiled } = yield* visibleWorkflow(principal, appId)
        const graph: WorkflowGraph = { appId: app.appId, name: app.name, ...graphOf(compiled) }
        return graph
      })
    }
  })
