/**
 * `appexec workspaces …` and `appexec keys …` (docs/cli.md#admin-commands): workspaces, and the
 * API keys of their users. `keys create` prints the key alone (shown once: it is stored as a hash);
 * `keys list` prints each active key as the console shows it (`aex_Twbo…myLI`), with its
 * workspace, user, creation and last use; `keys revoke` takes a key's id, the whole key, or its
 * hint as `keys list` and the console show it.
 */
import { Appexec } from "@appexec/core"
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
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

const workspacesList = Command.make("list", { store }, ({ store }) =>
  admin(
    store,
    Effect.gen(function*() {
      for (const w of yield* (yield* Appexec.Appexec).workspaces.list) {
        yield* Console.log([w.name, w.workspaceId, timeText(w.createdAt)].join("\t"))
      }
    })
  )).pipe(Command.withDescription("List the workspaces, oldest first: name, id, created (tab-separated)"))

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
  Command.withSubcommands([workspacesCreate, workspacesList])
)

/** `appexec keys …`. */
export const keys = Command.make("keys").pipe(
  Command.withDescription("API keys of workspace users: create, list, revoke"),
  Command.withSubcommands([keysCreate, keysList, keysRevoke])
)
