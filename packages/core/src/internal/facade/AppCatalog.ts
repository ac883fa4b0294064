/**
 * The app catalog: imports definitions into the app store and hands out compiled workflows,
 * compiling each workflow version once.
 */
import { AppId, type WorkflowId, type WorkspaceId } from "@appexec/api/Ids"
import { Context, Effect, Either, Layer, Option } from "effect"
import { type AppDefinition, compile, type CompiledApp, workflowIdOf } from "../../AppDefinition.js"
import { type AppRecord, AppStore, type WorkflowVersion } from "../../AppStore.js"
import { type InvalidAppDefinition, InvalidRequest, StorageError } from "../../Errors.js"
import { IdGenerator } from "../../IdGenerator.js"
import { NodeRegistry } from "../../NodeRegistry.js"
import * as ClaimPlan from "../engine/ClaimPlan.js"

/** Who owns an imported app: the whole service (public) or one workspace (private). */
export type AppOwner = { readonly public: true } | { readonly workspaceId: WorkspaceId }

/** How to import a definition. Without `owner`, the definition's own `"public": true` decides. */
export interface ImportOptions {
  readonly owner?: AppOwner
  /** Import as a new version of this app instead of matching by name within the owner's apps. */
  readonly appId?: AppId
}

/** A compiled workflow version. */
export interface LoadedWorkflow {
  readonly version: WorkflowVersion
  readonly app: CompiledApp
}

/** Imports app definitions and loads compiled workflows. */
export class AppCatalog extends Context.Tag("@appexec/core/AppCatalog")<
  AppCatalog,
  {
    /**
     * Checks a definition and stores it. An app of the same owner with the same name (or the
     * given `appId`) gets a new version when the content changed and stays as it is when not.
     */
    readonly import: (
      definition: unknown,
      options?: ImportOptions
    ) => Effect.Effect<AppRecord, InvalidAppDefinition | InvalidRequest | StorageError>
    /** The compiled workflow of a version; a version that no longer compiles is a `StorageError`. */
    readonly load: (workflowId: WorkflowId) => Effect.Effect<LoadedWorkflow, StorageError>
  }
>() {}

const ownerOf = (definition: AppDefinition, options: ImportOptions) =>
  options.owner !== undefined
    ? Either.right(options.owner)
    : definition.public === true
    ? Either.right<AppOwner>({ public: true })
    : Either.left(
      new InvalidRequest({ reason: "A private app needs an owning workspace; import it for a workspace or as public." })
    )

/** The catalog over the app store and node registry. */
export const layer = Layer.effect(
  AppCatalog,
  Effect.gen(function*() {
    const store = yield* AppStore
    const registry = yield* NodeRegistry
    const ids = yield* IdGenerator
    const cache = new Map<string, LoadedWorkflow>()

    // Every start and every run loads one: a cached version costs no generator.
    const load = (workflowId: WorkflowId): Effect.Effect<LoadedWorkflow, StorageError> => {
      const cached = cache.get(workflowId)
      return cached !== undefined ? Effect.succeed(cached) : loadVersion(workflowId)
    }
    const loadVersion = (workflowId: WorkflowId) =>
      Effect.gen(function*() {
        const cached = cache.get(workflowId)
        if (cached !== undefined) return cached
        const version = yield* store.getVersion(workflowId).pipe(
          Effect.flatMap(
            Option.match({
              onNone: () =>
                Effect.fail(
                  new StorageError({ operation: "load workflow", cause: `workflow ${workflowId} is missing` })
                ),
              onSome: Effect.succeed
            })
          )
        )
        const app = yield* Either.match(compile(version.definition, registry), {
          onLeft: (error) => Effect.fail(new StorageError({ operation: "compile workflow", cause: error })),
          onRight: Effect.succeed
        })
        const loaded = { version, app }
        cache.set(workflowId, loaded)
        return loaded
      })

    const importApp = (input: unknown, options: ImportOptions = {}) =>
      Effect.gen(function*() {
        const app = yield* compile(input, registry)
        const definition = app.definition
        const owner = yield* ownerOf(definition, options)
        const workspaceId = "workspaceId" in owner ? owner.workspaceId : null
        const existing = options.appId !== undefined
          ? yield* store.get(options.appId)
          : yield* store.findByName(workspaceId, definition.name)
        const appId = Option.match(existing, { onNone: () => undefined, onSome: (a) => a.appId }) ?? options.appId
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        const id = appId ?? AppId.make(yield* ids.uuid)
        const workflowId = workflowIdOf(id, definition)
        const record: AppRecord = {
          appId: id,
          name: definition.name,
          description: definition.description ?? null,
          isPublic: workspaceId === null,
          workspaceId,
          workflowId,
          createdAt: Option.match(existing, { onNone: () => now, onSome: (a) => a.createdAt }),
          updatedAt: now
        }
        yield* store.save(record, { workflowId, appId: id, definition, createdAt: now })
        // The workers of this process route and cap it from its first execution on.
        ClaimPlan.changed()
        cache.set(workflowId, { version: { workflowId, appId: id, definition, createdAt: now }, app })
        return record
      })

    return { import: importApp, load }
  })
)
