/**
 * `appexec workspaces …` and `appexec keys …` (docs/cli.md#admin-commands): workspaces, and the
 * API keys of their users. `keys create` prints the key alone (shown once: it is stored as a hash);
 * `workspaces set` sets a workspace's limits (docs/scaling.md#limits);
 * `keys list` prints each active key as the console shows it (`aex_Twbo…myLI`), with its
 * workspace, user, creation and last use; `keys revoke` takes a key's id, the whole key, or its
 * hint as `keys list` and the console show it.
 */
import { PRIORITY_MAX } from "@appexec/api/Execution"
import { Appexec } from "@appexec/core"
import { Args, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { admin, CommandFailed, store } from "./AdminCommands.js"

/** An ISO time, or `never`. */
const timeText = (ms: number | null): string => (ms === null ? "never" : new Date(ms).toISOString())

const workspacesCreate = Command.make(
  "create",
  {
    store,
    name: Args.text({ name: "NAME" }).pipe(Args.withDescription("The workspace's name (an existing one is reused)"))
  },
  ({ name, store }) =>
    admin(
      store,
      Effect.flatMap(Appexec.Appexec, (a) => a.workspaces.create(name)).pipe(
        Effect.flatMap((w) => Console.log(w.workspaceId))
      )
    )
).pipe(Command.withDescription("Create a workspace (or find it by name); prints its id"))

/** A limit as listed: its value, or `default`. */
const limitText = (
  limit: number | null | undefined
): string => (limit === null || limit === undefined ? "default" : `${limit}`)

const workspacesList = Command.make("list", { store }, ({ store }) =>
  admin(
    store,
    Effect.gen(function*() {
      for (const w of yield* (yield* Appexec.Appexec).workspaces.list) {
        yield* Console.log(
          [w.name, w.workspaceId, timeText(w.createdAt), limitText(w.maxRunning), limitText(w.maxPriority)].join("\t")
        )
      }
    })
  )).pipe(
    Command.withDescription(
      "List the workspaces, oldest first: name, id, created, max running, max priority (tab-separated)"
    )
  )

/** An option `--NAME N|none`: a number, or null for `none` (back to the default). */
const limitOption = (name: string, description: string) =>
  Options.text(name).pipe(
    Options.withPseudoName("N|none"),
    Options.withDescription(description),
    Options.mapEffect((text) => {
      if (text === "none") return Effect.succeed(null)
      const n = Number(text)
      return text.trim() !== "" && Number.isInteger(n)
        ? Effect.succeed(n)
        : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name} takes an integer or 'none', not '${text}'.`)))
    }),
    Options.optional
  )

const workspacesSet = Command.make(
  "set",
  {
    store,
    name: Args.text({ name: "NAME" }).pipe(Args.withDescription("The workspace's name")),
    maxRunning: limitOption(
      "max-running",
      "Most of its executions running at once in every process; none: the instance's --max-running-per-workspace"
    ),
    maxPriority: limitOption(
      "max-priority",
      `Highest priority its keys may start at, 0 to ${PRIORITY_MAX}; none: ${PRIORITY_MAX}`
    )
  },
  ({ maxPriority, maxRunning, name, store }) =>
    admin(
      store,
      Effect.gen(function*() {
        const set = yield* (yield* Appexec.Appexec).workspaces.set(name, {
          maxRunning: Option.getOrUndefined(maxRunning),
          maxPriority: Option.getOrUndefined(maxPriority)
        }).pipe(Effect.catchTag("InvalidRequest", (error) => new CommandFailed({ message: error.reason })))
        if (Option.isNone(set)) {
          return yield* new CommandFailed({
            message: `No workspace is named '${name}'; \`appexec workspaces list\` shows them.`
          })
        }
        const w = set.value
        yield* Console.log([w.name, limitText(w.maxRunning), limitText(w.maxPriority)].join("\t"))
      })
    )
).pipe(
  Command.withDescription(
    "Set a workspace's limits: --max-running, --max-priority (N, or none for the default); prints name, max running, max priority"
  )
)

const keysCreate = Command.make(
  "create",
  {
    store,
    workspace: Options.text("workspace").pipe(
      Options.withPseudoName("NAME"),
      Options.withDescription("Workspace name (created when missing)")
    ),
    user: Options.text("user").pipe(
      Options.withPseudoName("NAME"),
      Options.withDescription("User name (created when missing)"),
      Options.withDefault("default")
    )
  },
  ({ store, user, workspace }) =>
    admin(
      store,
      Effect.flatMap(Appexec.Appexec, (a) => a.keys.create({ workspace, user })).pipe(
        Effect.flatMap((k) => Console.log(k.key))
      )
    )
).pipe(Command.withDescription("Create an API key; prints only the key (shown once)"))

const keysList = Command.make("list", { store }, ({ store }) =>
  admin(
    store,
    Effect.gen(function*() {
      for (const k of yield* (yield* Appexec.Appexec).keys.list) {
        yield* Console.log(
          [k.hint, k.workspace, k.user, timeText(k.createdAt), timeText(k.lastUsedAt), k.apiKeyId].join("\t")
        )
      }
    })
  )).pipe(
    Command.withDescription(
      "List the active keys, oldest first: hint, workspace, user, created, last used, id (tab-separated)"
    )
  )

const keysRevoke = Command.make(
  "revoke",
  {
    store,
    key: Args.text({ name: "KEY_HINT_OR_ID" }).pipe(
      Args.withDescription(
        "The key's hint as `keys list` and the console show it (aex_Twbo…myLI), its id, or the whole key"
      )
    )
  },
  ({ key, store }) =>
    admin(
      store,
      Effect.gen(function*() {
        const revoked = yield* (yield* Appexec.Appexec).keys.revoke(key)
        if (revoked === 0) {
          return yield* new CommandFailed({
            message: `No active key has the hint, id or value '${key}'; \`appexec keys list\` shows the active keys.`
          })
        }
        yield* Console.log(`revoked ${revoked}`)
      })
    )
).pipe(Command.withDescription("Revoke a key by its hint (as keys list shows it), its id, or the whole key"))

/** `appexec workspaces …`. */
export const workspaces = Command.make("workspaces").pipe(
  Command.withDescription("Workspaces: the tenants that own keys, private apps and executions"),
  Command.withSubcommands([workspacesCreate, workspacesList, workspacesSet])
)

/** `appexec keys …`. */
export const keys = Command.make("keys").pipe(
  Command.withDescription("API keys of workspace users: create, list, revoke"),
  Command.withSubcommands([keysCreate, keysList, keysRevoke])
)
