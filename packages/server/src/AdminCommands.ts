/**
 * The admin commands of `appexec` (docs/cli.md): workspaces, keys, apps, executions, the signing
 * key and `prune`. Each runs against the same database as `serve` (SQLite under `--data`, or
 * PostgreSQL with `--database`), also while it runs, with no worker, and prints only its result
 * on stdout.
 */
import { type Ids } from "@appexec/api"
import { Appexec, SigningKeys } from "@appexec/core"
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option, Schema } from "effect"
import { readFile } from "node:fs/promises"
import type * as Database from "./Database.js"
import * as Instance from "./Instance.js"
import * as SharedFlags from "./internal/SharedFlags.js"
import * as MediaStorage from "./MediaStorage.js"

const { data, database } = SharedFlags

/** A command could not do what it was asked; `message` says why, for the operator. */
export class CommandFailed extends Schema.TaggedError<CommandFailed>()("CommandFailed", {
  message: Schema.String
}) {}

/** Runs an admin action on the instance of `dataDir` or `database`, without a worker. */
const admin = <A, E>(dataDir: string, database: Database.Database, action: Effect.Effect<A, E, Appexec.Appexec>) =>
  action.pipe(Effect.provide(Instance.layer({ dataDir, database, background: false })))

const workspacesCreate = Command.make(
  "create",
  { data, database, name: Args.text({ name: "NAME" }) },
  ({ data, database, name }) =>
    admin(
      data,
      database,
      Effect.flatMap(Appexec.Appexec, (a) => a.workspaces.create(name)).pipe(
        Effect.flatMap((w) => Console.log(w.workspaceId))
      )
    )
).pipe(Command.withDescription("Create a workspace (or find it by name); prints its id"))

const keysCreate = Command.make(
  "create",
  {
    data,
    database,
    workspace: Options.text("workspace").pipe(Options.withDescription("Workspace name (created when missing)")),
    user: Options.text("user").pipe(
      Options.withDescription("User name (created when missing)"),
      Options.withDefault("default")
    )
  },
  ({ data, database, workspace, user }) =>
    admin(
      data,
      database,
      Effect.flatMap(Appexec.Appexec, (a) => a.keys.create({ workspace, user })).pipe(
        Effect.flatMap((k) => Console.log(k.key))
      )
    )
).pipe(Command.withDescription("Create an API key; prints only the key"))

const keysRevoke = Command.make(
  "revoke",
  { data, database, key: Args.text({ name: "KEY_PREFIX_OR_ID" }) },
  ({ data, database, key }) =>
    admin(
      data,
      database,
      Effect.gen(function*() {
        const revoked = yield* (yield* Appexec.Appexec).keys.revoke(key)
        if (revoked === 0) return yield* new CommandFailed({ message: `No active key has the id or prefix '${key}'.` })
        yield* Console.log(`revoked ${revoked}`)
      })
    )
).pipe(Command.withDescription("Revoke a key by its id or its prefix (the prefix and first 6 characters)"))

const appsImport = Command.make(
  "import",
  {
    data,
    database,
    file: Args.file({ name: "FILE.json", exists: "yes" }),
    workspace: Options.text("workspace").pipe(
      Options.withDescription("Import as a private app of this workspace"),
      Options.optional
    ),
    public: Options.boolean("public").pipe(Options.withDescription("Import as a public app"))
  },
  ({ data, database, file, workspace, public: isPublic }) =>
    admin(
      data,
      database,
      Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        if (isPublic && Option.isSome(workspace)) {
          return yield* new CommandFailed({ message: "Give either --workspace or --public, not both." })
        }
        const text = yield* Effect.tryPromise({
          try: () => readFile(file, "utf8"),
          catch: (e) =>
            new CommandFailed({ message: `${file} could not be read: ${e instanceof Error ? e.message : String(e)}` })
        })
        const definition = yield* Effect.try({
          try: (): unknown => JSON.parse(text),
          catch: (e) =>
            new CommandFailed({ message: `${file} is not valid JSON: ${e instanceof Error ? e.message : String(e)}` })
        })
        const owner = isPublic
          ? { public: true as const }
          : Option.isSome(workspace)
          ? { workspaceId: (yield* appexec.workspaces.create(workspace.value)).workspaceId as Ids.WorkspaceId }
          : undefined
        const app = yield* appexec.apps.import(definition, owner === undefined ? {} : { owner })
        yield* Console.log(app.appId)
      })
    )
).pipe(Command.withDescription("Import an app definition; prints only the appId"))

const appsList = Command.make("list", { data, database }, ({ data, database }) =>
  admin(
    data,
    database,
    Effect.gen(function*() {
      const all = yield* (yield* Appexec.Appexec).apps.listAll
      for (const app of all) {
        yield* Console.log(`${app.appId}\t${app.isPublic ? "public" : `workspace ${app.workspaceId}`}\t${app.name}`)
      }
    })
  )).pipe(Command.withDescription("List every app: id, owner, name"))

const executionsCancel = Command.make(
  "cancel",
  { data, database, executionId: Args.text({ name: "EXECUTION_ID" }) },
  ({ data, database, executionId }) =>
    admin(
      data,
      database,
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
  { data, database, grace: SharedFlags.grace("grace") },
  ({ data, database, grace }) =>
    SigningKeys.rotate.pipe(
      Effect.flatMap((jwk) => Console.log(jwk.kid)),
      Effect.provide(
        Instance.layer({ dataDir: data, database, background: false, config: { signingKeyGrace: grace } })
      )
    )
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
    data,
    database,
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
  ({ data, database, workspace, status, limit }) =>
    admin(
      data,
      database,
      Effect.gen(function*() {
        const records = yield* (yield* Appexec.Appexec).operator.listExecutions({
          workspace: Option.getOrUndefined(workspace),
          status: Option.getOrUndefined(status),
          limit
        }).pipe(Effect.catchTag("InvalidRequest", (error) => new CommandFailed({ message: error.message })))
        const time = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString())
        for (const r of records) {
          yield* Console.log(
            [r.executionId, r.status, r.workspaceId, r.appId, time(r.createdAt), time(r.completedAt), r.attempt ?? 0]
              .join("\t")
          )
        }
      })
    )
).pipe(
  Command.withDescription(
    "List executions, newest first: id, status, workspace id, app id, created and completed (ISO times), attempt; tab-separated"
  )
)

/** `appexec prune`. */
export const prune = Command.make(
  "prune",
  {
    data,
    database,
    // The bucket of `serve --media`, whose objects go with their executions.
    media: MediaStorage.location,
    mediaEndpoint: MediaStorage.endpoint,
    retention: SharedFlags.retention("Delete finished executions that ended longer ago than this")
  },
  ({ data, database, retention, ...flags }) =>
    Effect.flatMap(
      MediaStorage.fromFlags(flags),
      (media) =>
        Effect.flatMap(Appexec.Appexec, (a) => a.operator.prune({ olderThan: retention })).pipe(
          Effect.flatMap((deleted) => Console.log(`deleted ${deleted}`)),
          Effect.provide(Instance.layer({ dataDir: data, database, background: false, media }))
        )
    )
).pipe(
  Command.withDescription(
    "Delete finished executions past the retention now, with their webhook deliveries and media; prints how many"
  )
)

/** `appexec workspaces …`. */
export const workspaces = Command.make("workspaces").pipe(Command.withSubcommands([workspacesCreate]))

/** `appexec keys …`. */
export const keys = Command.make("keys").pipe(Command.withSubcommands([keysCreate, keysRevoke]))

/** `appexec apps …`. */
export const apps = Command.make("apps").pipe(Command.withSubcommands([appsImport, appsList]))

/** `appexec executions …`. */
export const executions = Command.make("executions").pipe(
  Command.withDescription("Executions, for operators"),
  Command.withSubcommands([executionsList, executionsCancel])
)

/** `appexec signing-key …`. */
export const signingKey = Command.make("signing-key").pipe(Command.withSubcommands([signingKeyRotate]))
