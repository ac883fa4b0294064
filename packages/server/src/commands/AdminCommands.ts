/**
 * The admin commands of `appexec` (docs/cli.md): apps, executions, the signing key and `prune`
 * (workspaces and keys are `KeyCommands`). Each runs against the same database as `serve` (SQLite under `--data`, or
 * PostgreSQL with `--database`), also while it runs, with no worker, and prints only its result
 * on stdout.
 */
import { type Ids } from "@appexec/api"
import { Appexec, OperatorViews, SigningKeys } from "@appexec/core"
import { ComfyuiApp } from "@appexec/nodes-comfyui"
import { Args, Command, Options } from "@effect/cli"
import { Clock, Console, Effect, Either, Option, Schema } from "effect"
import { readFile } from "node:fs/promises"
import * as Database from "../Database.js"
import * as Instance from "../Instance.js"
import * as MediaStorage from "../MediaStorage.js"
import * as Catalog from "../settings/Catalog.js"
import * as CliOptions from "../settings/CliOptions.js"
import type * as Resolve from "../settings/Resolve.js"
import * as SharedSettings from "../settings/SharedSettings.js"
import * as StoreSettings from "../settings/StoreSettings.js"
import * as WorkSettings from "../settings/WorkSettings.js"
import * as WatchCommand from "./WatchCommand.js"

/** Where the state is (`--data`, `--database` and its settings, `--config`): every admin command's settings. */
export const store = CliOptions.resolvedOf(Catalog.store, () => Either.right("admin"))

/** A command could not do what it was asked; `message` says why, for the operator. */
export class CommandFailed extends Schema.TaggedError<CommandFailed>()("CommandFailed", {
  message: Schema.String
}) {}

/**
 * Runs an admin action on the instance of `settings` (its data directory or database), without a
 * worker; `options` add to the instance (a bucket, engine settings).
 */
export const admin = <A, E, R>(
  settings: Resolve.Resolved,
  action: Effect.Effect<A, E, R>,
  options: Pick<Instance.InstanceOptions, "media" | "config"> = {}
) =>
  Effect.flatMap(Database.fromSettings(settings), (database) =>
    action.pipe(
      Effect.provide(
        Instance.layer({
          ...options,
          dataDir: settings.get(StoreSettings.data),
          database,
          background: false,
          admin: true
        })
      )
    ))

/** The `--workspace` and `--public` options of an import. */
const ownerOptions = {
  workspace: Options.text("workspace").pipe(
    Options.withPseudoName("NAME"),
    Options.withDescription("Import as a private app of this workspace (by name; created when missing)"),
    Options.optional
  ),
  public: Options.boolean("public").pipe(Options.withDescription("Import as a public app"))
}

/** Reads `file` as JSON. */
const readJson = (file: string) =>
  Effect.tryPromise({
    try: () => readFile(file, "utf8"),
    catch: (e) =>
      new CommandFailed({ message: `${file} could not be read: ${e instanceof Error ? e.message : String(e)}` })
  }).pipe(
    Effect.flatMap((text) =>
      Effect.try({
        try: (): unknown => JSON.parse(text),
        catch: (e) =>
          new CommandFailed({ message: `${file} is not valid JSON: ${e instanceof Error ? e.message : String(e)}` })
      })
    )
  )

/** Imports `definition` (read from `file`) for `workspace`, publicly, or as it says; prints the appId. */
const importDefinition = (
  file: string,
  definition: unknown,
  isPublic: boolean,
  workspace: Option.Option<string>
) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    if (isPublic && Option.isSome(workspace)) {
      return yield* new CommandFailed({ message: "Give either --workspace or --public, not both." })
    }
    if (!isPublic && Option.isNone(workspace) && !markedPublic(definition)) {
      return yield* new CommandFailed({
        message: `${file} is a private app (its definition has no "public": true): import it for a workspace ` +
          `with --workspace NAME (\`appexec workspaces list\` names them; "default" is the one serve made), ` +
          `or for every workspace with --public.`
      })
    }
    const owner = isPublic
      ? { public: true as const }
      : Option.isSome(workspace)
      ? { workspaceId: (yield* appexec.workspaces.create(workspace.value)).workspaceId as Ids.WorkspaceId }
      : undefined
    const app = yield* appexec.apps.import(definition, owner === undefined ? {} : { owner })
    yield* Console.log(app.appId)
  })

const appsImport = Command.make(
  "import",
  {
    store,
    file: Args.file({ name: "FILE.json", exists: "yes" }).pipe(
      Args.withDescription("An app definition (docs/apps.md), such as those in packages/server/apps")
    ),
    ...ownerOptions
  },
  ({ file, public: isPublic, store, workspace }) =>
    admin(
      store,
      Effect.flatMap(readJson(file), (definition) => importDefinition(file, definition, isPublic, workspace))
    )
).pipe(Command.withDescription("Import an app definition; prints only the appId"))

const appsImportComfyui = Command.make(
  "import-comfyui",
  {
    store,
    file: Args.file({ name: "WORKFLOW_API.json", exists: "yes" }).pipe(
      Args.withDescription("A ComfyUI workflow in API format (in ComfyUI: Workflow, Export (API))")
    ),
    name: Options.text("name").pipe(Options.withPseudoName("NAME"), Options.withDescription("The app's name")),
    description: Options.text("description").pipe(
      Options.withPseudoName("TEXT"),
      Options.withDescription("The app's description"),
      Options.optional
    ),
    params: Options.text("param").pipe(
      Options.withPseudoName("NAME=NODE.INPUT"),
      Options.withDescription(
        "A parameter and the workflow input it sets, by node id or title (prompt=6.text); repeatable"
      ),
      Options.repeated
    ),
    ...ownerOptions
  },
  ({ description, file, name, params, public: isPublic, store, workspace }) =>
    admin(
      store,
      Effect.gen(function*() {
        const workflow = yield* readJson(file)
        const parsed = yield* Either.all(params.map(ComfyuiApp.parseParam)).pipe(
          Either.mapLeft((message) => new CommandFailed({ message }))
        )
        const definition = yield* ComfyuiApp.definitionOf(workflow, {
          name,
          description: Option.getOrUndefined(description),
          params: parsed
        }).pipe(Either.mapLeft((message) => new CommandFailed({ message: `${file}: ${message}` })))
        yield* importDefinition(file, definition, isPublic, workspace)
      })
    )
).pipe(
  Command.withDescription(
    "Make an app of a ComfyUI workflow (API format) run by provider.comfyui, one parameter per --param; prints only the appId"
  )
)

const appsList = Command.make("list", { store }, ({ store }) =>
  admin(
    store,
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const all = yield* appexec.apps.listAll
      const names = new Map((yield* appexec.workspaces.list).map((w) => [w.workspaceId as string, w.name]))
      for (const app of all) {
        const owner = app.isPublic || app.workspaceId === null
          ? "public"
          : `workspace ${names.get(app.workspaceId) ?? app.workspaceId}`
        yield* Console.log(`${app.appId}\t${owner}\t${app.name}`)
      }
    })
  )).pipe(Command.withDescription("List every app: id, owner (public, or workspace NAME), name (tab-separated)"))

/** Whether an app definition says `"public": true` (the import checks the rest). */
const markedPublic = (definition: unknown): boolean =>
  typeof definition === "object" && definition !== null && "public" in definition && definition.public === true

const executionsCancel = Command.make(
  "cancel",
  {
    store,
    executionId: Args.text({ name: "EXECUTION_ID" }).pipe(Args.withDescription("The execution's id"))
  },
  ({ executionId, store }) =>
    admin(
      store,
      Effect.gen(function*() {
        const execution = yield* (yield* Appexec.Appexec).executions.cancel(executionId).pipe(
          Effect.catchTags({
            ExecutionNotFound: (e) => new CommandFailed({ message: e.message }),
            ExecutionFinished: (e) => new CommandFailed({ message: e.message })
          })
        )
        // A running execution is stopped by the worker that holds it, within a second.
        yield* Console.log(
          `${execution.executionId}\t${execution.status === "failed" ? "canceled" : "cancel requested"}`
        )
      })
    )
).pipe(
  Command.withDescription(
    "Cancel an execution of any workspace: a queued one fails at once, a running one is interrupted by its worker"
  )
)

const signingKeyRotate = Command.make(
  "rotate",
  {
    settings: CliOptions.resolvedOf(Catalog.rotate, () => Either.right("admin"), {
      rename: { "signing-key-grace": "grace" }
    })
  },
  ({ settings }) =>
    admin(settings, Effect.flatMap(SigningKeys.rotate, (jwk) => Console.log(jwk.kid)), {
      config: { signingKeyGrace: settings.get(WorkSettings.signingKeyGrace) }
    })
).pipe(
  Command.withDescription(
    "Sign webhooks with a new key from now on; the previous key stays published for the grace period. Prints the new kid"
  )
)

const executionStatus = Options.choice("status", ["queued", "running", "completed", "failed"]).pipe(
  Options.withDescription("Only executions in this status"),
  Options.optional
)

const executionsList = Command.make(
  "list",
  {
    store,
    workspace: Options.text("workspace").pipe(
      Options.withDescription("Only this workspace's executions"),
      Options.optional
    ),
    status: executionStatus,
    limit: Options.integer("limit").pipe(
      Options.withDescription(`At most this many, newest first (1 to ${Appexec.OPERATOR_LIST_LIMIT.max})`),
      Options.withDefault(Appexec.OPERATOR_LIST_LIMIT.default)
    )
  },
  ({ limit, status, store, workspace }) =>
    admin(
      store,
      Effect.gen(function*() {
        const records = yield* (yield* Appexec.Appexec).operator.listExecutions({
          workspace: Option.getOrUndefined(workspace),
          status: Option.getOrUndefined(status),
          limit
        }).pipe(Effect.catchTag("InvalidRequest", (error) => new CommandFailed({ message: error.message })))
        const time = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString())
        // The process holding each running execution's lease (empty when none does).
        const holders = yield* (yield* OperatorViews.OperatorViews).holdersOf(
          records.map((r) => r.executionId),
          yield* Clock.currentTimeMillis
        )
        for (const r of records) {
          yield* Console.log(
            [
              r.executionId,
              r.status,
              r.workspaceId,
              r.appId,
              time(r.createdAt),
              time(r.completedAt),
              r.attempt ?? 0,
              holders.get(r.executionId) ?? ""
            ].join("\t")
          )
        }
      })
    )
).pipe(
  Command.withDescription(
    "List executions, newest first: id, status, workspace id, app id, created and completed (ISO times), attempt, " +
      "the process running it (empty when none); tab-separated"
  )
)

/** `appexec prune`. */
export const prune = Command.make(
  "prune",
  // The bucket is not needed: media are deleted from every store the deployment recorded
  // (`MediaStores`); it is taken as `serve` takes it, and a bucket given here is recorded too.
  { settings: CliOptions.resolvedOf(Catalog.prune, () => Either.right("admin")) },
  ({ settings }) =>
    Effect.flatMap(
      MediaStorage.fromSettings({
        media: settings.get(SharedSettings.media),
        mediaEndpoint: settings.get(SharedSettings.mediaEndpoint)
      }),
      (media) =>
        admin(
          settings,
          Effect.flatMap(Appexec.Appexec, (a) =>
            a.operator.prune({ olderThan: settings.get(WorkSettings.pruneRetention) }))
            .pipe(Effect.flatMap((deleted) =>
              Console.log(`deleted ${deleted}`)
            )),
          { media }
        )
    )
).pipe(
  Command.withDescription(
    "Delete finished executions past the retention now, with their webhook deliveries and media; prints how many"
  )
)

/** `appexec apps …`. */
export const apps = Command.make("apps").pipe(
  Command.withDescription("Apps: import a definition or a ComfyUI workflow, list every app"),
  Command.withSubcommands([appsImport, appsImportComfyui, appsList])
)

/** `appexec executions …`. */
export const executions = Command.make("executions").pipe(
  Command.withDescription("Executions: list and cancel them (operators), watch one through the HTTP API"),
  Command.withSubcommands([executionsList, executionsCancel, WatchCommand.watchCommand])
)

/** `appexec signing-key …`. */
export const signingKey = Command.make("signing-key").pipe(
  Command.withDescription("The key that signs webhooks"),
  Command.withSubcommands([signingKeyRotate])
)
