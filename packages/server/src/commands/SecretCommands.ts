/**
 * `appexec secrets …` (docs/secrets.md): the secrets an operator manages, such as a model
 * provider's token, which nodes refer to by name. `set NAME` reads the value from stdin (a hidden
 * prompt on a terminal) and never prints it; `list` prints names, scopes and times, never values;
 * `delete NAME` removes one. `--workspace NAME` sets a secret for one workspace, overriding the
 * instance's of the same name. They run on the same database as `serve`, also while it runs: the
 * next node that reads a secret reads what was set. Setting an instance secret imports the
 * provider example apps that waited for it (`ProviderApps`).
 */
import { type Ids } from "@appexec/api"
import { KeyStore, SecretStore } from "@appexec/core"
import { Args, Command, Options, Prompt } from "@effect/cli"
import { Console, Effect, Either, Option, Redacted, Schema } from "effect"
import * as Bootstrap from "../Bootstrap.js"
import * as ProviderApps from "../ProviderApps.js"
import { admin, CommandFailed, store } from "./AdminCommands.js"

const name = Args.text({ name: "NAME" }).pipe(
  Args.withDescription("The secret's name: a letter, then letters, digits and underscores (at most 128)")
)

const workspace = Options.text("workspace").pipe(
  Options.withDescription(
    "The secret of this workspace (by name), which overrides the instance's; absent: the instance's"
  ),
  Options.optional
)

/** `name` checked against `SecretStore.SecretName`. */
const checkedName = (text: string) =>
  Either.isRight(Schema.decodeUnknownEither(SecretStore.SecretName)(text))
    ? Effect.succeed(text)
    : new CommandFailed({
      message: `'${text}' is not a secret's name: a letter, then letters, digits and underscores (at most 128).`
    })

/** The scope of `--workspace`: the instance's, or the id of the named workspace (which must exist). */
const scopeOf = (workspaceName: Option.Option<string>) =>
  Option.match(workspaceName, {
    onNone: () => Effect.succeed<SecretStore.SecretScope>(undefined),
    onSome: (named) =>
      Effect.flatMap(KeyStore.KeyStore, (keys) => keys.findWorkspace(named)).pipe(
        Effect.flatMap(Option.match({
          onNone: () =>
            new CommandFailed({
              message: `No workspace is named '${named}' (appexec workspaces create ${named} makes one).`
            }),
          onSome: (found) => Effect.succeed<SecretStore.SecretScope>(found.workspaceId as Ids.WorkspaceId)
        }))
      )
  })

const scopeText = (workspaceName: Option.Option<string>) =>
  Option.match(workspaceName, { onNone: () => "the instance", onSome: (named) => `workspace ${named}` })

/** Most bytes read from stdin: a value over `MAX_VALUE_BYTES` is refused without reading it all. */
const STDIN_LIMIT = SecretStore.MAX_VALUE_BYTES + 2

/** Everything on stdin (piped), up to `STDIN_LIMIT` bytes, as UTF-8. */
const readPiped = Effect.async<string, CommandFailed>((resume) => {
  const chunks: Array<Buffer> = []
  let size = 0
  const stdin = process.stdin
  const done = (result: Effect.Effect<string, CommandFailed>) => {
    stdin.off("data", onData).off("end", onEnd).off("error", onError)
    stdin.pause()
    resume(result)
  }
  const onData = (chunk: Buffer | string) => {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk
    chunks.push(bytes)
    size += bytes.length
    if (size > STDIN_LIMIT) {
      done(
        new CommandFailed({
          message: `The value is more than the ${SecretStore.MAX_VALUE_BYTES} bytes a secret may hold.`
        })
      )
    }
  }
  const onEnd = () => done(Effect.succeed(Buffer.concat(chunks).toString("utf8")))
  const onError = (error: Error) => done(new CommandFailed({ message: `stdin could not be read: ${error.message}` }))
  stdin.on("data", onData).once("end", onEnd).once("error", onError)
  stdin.resume()
})

/**
 * The value to set: stdin without its trailing line breaks (`echo` and files end with one), or
 * on a terminal what is typed at a prompt that shows nothing.
 */
const readValue = (secret: string) =>
  Effect.map(
    process.stdin.isTTY === true
      ? Prompt.hidden({ message: `Value of ${secret} (not shown)` }).pipe(
        Effect.map(Redacted.value),
        Effect.catchTag("QuitException", () => new CommandFailed({ message: "No value was given." }))
      )
      : readPiped,
    (text) => Redacted.make(text.replace(/[\r\n]+$/, ""))
  )

/**
 * A subcommand on one secret: `NAME`, checked, with `--workspace` (its scope) and `--store`; `run`
 * does the work as an admin command.
 */
const onSecret = <E, R>(
  command: string,
  run: (secret: string, workspace: Option.Option<string>) => Effect.Effect<void, E, R>
) =>
  Command.make(
    command,
    { store, workspace, name },
    ({ name, store, workspace }) => admin(store, Effect.flatMap(checkedName(name), (secret) => run(secret, workspace)))
  )

const secretsSet = onSecret(
  "set",
  (secret, workspace) =>
    Effect.gen(function*() {
      const scope = yield* scopeOf(workspace)
      const value = yield* readValue(secret)
      const problem = SecretStore.problemOf(secret, value)
      if (problem !== undefined) {
        return yield* new CommandFailed({
          message: `${problem.charAt(0).toUpperCase()}${
            problem.slice(1)
          }: give it on stdin, e.g. printf '%s' "$TOKEN" | appexec secrets set ${secret}.`
        })
      }
      yield* (yield* SecretStore.SecretStore).set(secret, value, scope).pipe(
        Effect.catchTag(
          "StorageError",
          (error) => new CommandFailed({ message: `The secret ${secret} could not be set: ${String(error.cause)}` })
        )
      )
      yield* Console.log(`set ${secret} for ${scopeText(workspace)}`)
      // An instance secret may be what a provider example app waited for (docs/apps.md).
      if (scope === undefined) {
        const report = yield* ProviderApps.importReady(Bootstrap.defaultAppsDir).pipe(
          Effect.catchAll((error) =>
            Effect.logWarning("the provider example apps could not be checked", error).pipe(Effect.as([]))
          )
        )
        const imported = report.filter((app) => app.state === "imported").map((app) => app.name)
        if (imported.length > 0) {
          yield* Console.log(`Imported the provider example app(s) ${imported.join(", ")}, which needed ${secret}.`)
        }
      }
    })
).pipe(
  Command.withDescription(
    "Set a secret (replacing one of the same name and scope) from stdin, sealed with the master key; never printed"
  )
)

const secretsList = Command.make("list", { store }, ({ store }) =>
  admin(
    store,
    Effect.gen(function*() {
      for (const entry of yield* (yield* SecretStore.SecretStore).list) {
        const scope = entry.workspaceId === undefined ? "instance" : `workspace ${entry.workspaceId}`
        yield* Console.log(`${entry.name}\t${scope}\t${new Date(entry.updatedAt).toISOString()}`)
      }
    })
  )).pipe(
    Command.withDescription(
      "List the secrets: name, scope (instance, or workspace and its id), when set (ISO time); tab-separated, never values"
    )
  )

const secretsDelete = onSecret(
  "delete",
  (secret, workspace) =>
    Effect.gen(function*() {
      const deleted = yield* (yield* SecretStore.SecretStore).delete(secret, yield* scopeOf(workspace))
      if (!deleted) {
        return yield* new CommandFailed({ message: `No secret ${secret} is set for ${scopeText(workspace)}.` })
      }
      yield* Console.log(`deleted ${secret} for ${scopeText(workspace)}`)
    })
).pipe(Command.withDescription("Delete a secret of the instance, or of one workspace with --workspace"))

/** `appexec secrets …`. */
export const secrets = Command.make("secrets").pipe(
  Command.withDescription("Secrets that nodes refer to by name (a provider's token), sealed at rest"),
  Command.withSubcommands([secretsSet, secretsList, secretsDelete])
)
