/**
 * `appexec run APP --input name=value … [--webhook URL [--webhook-events start,output,logs,completed]]
 * [--priority N] [--base-url URL] [--key KEY]`: runs an
 * app on an appexec service through `@appexec/client`, as an API consumer would. It reads the
 * app's parameters (APP is an app id or an exact app name; an unknown name is answered with the
 * closest ones), uploads the local files given to its URL parameters as `name=@FILE`
 * (`POST /v1/uploads`), checks the inputs against them, starts one execution, says its id, and
 * follows it (`internal/Follower`: its event stream, or polling on a server without one), showing
 * on stderr its status, queue position, the nodes' progress and their log lines, then prints every
 * output on stdout (text values, media URLs). A failed execution exits non-zero with its error
 * message; wrong inputs list the app's parameters under its name. Stopped (Ctrl-C) while it
 * follows, it says how to follow the execution again (`appexec executions watch ID`).
 */
import { type App, Execution } from "@appexec/api"
import { type AppexecClient, ClientError, type Polling } from "@appexec/client"
import { MediaType } from "@appexec/core"
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { readFile } from "node:fs/promises"
import * as ApiAccess from "../internal/ApiAccess.js"
import { RunUsageError } from "../internal/ApiAccess.js"
import * as AppNames from "../internal/AppNames.js"
import * as Follower from "../internal/Follower.js"

export { noKeyMessage, RunUsageError } from "../internal/ApiAccess.js"
export { RunFailed } from "../internal/Follower.js"
export { formatElapsed } from "../internal/LiveDisplay.js"

/** Parses repeated `name=value` pairs; the value runs from the first `=` to the end (URLs keep their queries). */
export const parseInputs = (pairs: ReadonlyArray<string>): Effect.Effect<Record<string, string>, RunUsageError> =>
  Effect.gen(function*() {
    const inputs: Record<string, string> = {}
    for (const pair of pairs) {
      const at = pair.indexOf("=")
      if (at <= 0) return yield* new RunUsageError({ message: `--input '${pair}' is not name=value.` })
      inputs[pair.slice(0, at)] = pair.slice(at + 1)
    }
    return inputs
  })

/**
 * The inputs with every `url` value written `@PATH` replaced by the signed URL of that file,
 * uploaded first (`POST /v1/uploads`, its type told by its bytes); each upload is said on stderr.
 * A text or options value that starts with `@` stays as it is.
 */
export const uploadFiles = (
  client: AppexecClient.AppexecClientService,
  parameters: ReadonlyArray<App.Parameter>,
  inputs: Readonly<Record<string, string>>
): Effect.Effect<Record<string, string>, RunUsageError | ClientError.RequestError> =>
  Effect.gen(function*() {
    const urlNames = new Set(parameters.filter((p) => p.type === "url").map((p) => p.name))
    const resolved: Record<string, string> = { ...inputs }
    for (const [name, value] of Object.entries(inputs)) {
      if (!urlNames.has(name) || !value.startsWith("@") || value.length === 1) continue
      const path = value.slice(1)
      const bytes = yield* Effect.tryPromise({
        try: () => readFile(path),
        catch: (error) =>
          new RunUsageError({
            message: `--input ${name}=@${path}: the file cannot be read (${
              error instanceof Error && "code" in error ? String(error.code) : String(error)
            }).`
          })
      })
      const file = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      const sniffed = MediaType.sniff(file)
      if (Option.isNone(sniffed)) {
        return yield* new RunUsageError({
          message: `--input ${name}=@${path}: the file is no image, video or audio file an upload may be (${
            MediaType.supported.join(", ")
          }).`
        })
      }
      const upload = yield* client.upload(file, { contentType: sniffed.value.contentType })
      yield* Console.error(`uploaded ${path} (${upload.contentType}, ${upload.bytes} bytes) as ${name}`)
      resolved[name] = upload.url
    }
    return resolved
  })

/**
 * The webhook events of `--webhook-events start,output,completed` (docs/webhooks.md#events),
 * checked here so that a mistake is said before anything is sent: known names, and a `--webhook`.
 */
export const parseWebhookEvents = (
  text: string,
  webhook: Option.Option<string>
): Effect.Effect<ReadonlyArray<Execution.WebhookEvent>, RunUsageError> => {
  const names = text.split(",").map((name) => name.trim())
  const known = Execution.WEBHOOK_EVENTS
  const unknown = names.filter((name) => !known.some((event) => event === name))
  if (unknown.length > 0) {
    return Effect.fail(
      new RunUsageError({
        message: `--webhook-events: ${unknown.map((name) => `'${name}'`).join(", ")} ${
          unknown.length === 1 ? "is not an event" : "are not events"
        }; the events are ${known.join(", ")}.`
      })
    )
  }
  if (Option.isNone(webhook)) {
    return Effect.fail(new RunUsageError({ message: "--webhook-events needs --webhook URL to send the events to." }))
  }
  return Effect.succeed(known.filter((event) => names.includes(event)))
}

/** One line per parameter: what `--input` expects. */
export const describeParameters = (parameters: ReadonlyArray<App.Parameter>): ReadonlyArray<string> =>
  parameters.map((p) => {
    const kind = p.type === "options"
      ? `one of ${(p.options ?? []).join(", ")}`
      : p.type === "url"
      ? "a public http(s) URL, or @FILE to upload"
      : "text"
    const flags = [p.required ? "required" : "optional", ...(p.default === undefined ? [] : [`default ${p.default}`])]
    return `  --input ${p.name}=…  ${kind} (${flags.join(", ")})`
  })

/** How the command shows progress. */
export interface RunCommandOptions {
  /** Polling interval (default the client's: 3–5 s). */
  readonly interval?: Polling.Interval
  /**
   * Redraw the display in place (status, a bar per node) every second and at every event, with
   * ANSI cursor moves; else plain lines (default: when stderr is a terminal).
   */
  readonly live?: boolean
}

/**
 * What `run` says of positional `name=value` arguments, which are inputs given without `--input`:
 * the command line as it should have been.
 */
export const positionalInputsMessage = (app: string, positional: ReadonlyArray<string>): string => {
  const quoted = (text: string) => (/^[\w@.,:/=+-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`)
  return `Inputs go after --input (or -i): appexec run ${quoted(app)} ${
    positional.map((pair) => `--input ${quoted(pair)}`).join(" ")
  }`
}

/** The `run` command, to add to the `appexec` command's subcommands. */
export const make = (options: RunCommandOptions = {}) =>
  Command.make(
    "run",
    {
      app: Args.text({ name: "APP" }).pipe(
        Args.withDescription("The app's name (as GET /v1/apps lists it; any case) or its id")
      ),
      // Only to say what to do with inputs given without --input.
      positional: Args.text({ name: "name=value" }).pipe(
        Args.withDescription("Not taken: give inputs with --input name=value"),
        Args.repeated
      ),
      input: Options.text("input").pipe(
        Options.withAlias("i"),
        Options.withPseudoName("name=value"),
        Options.withDescription(
          "An input as name=value (repeat for each parameter); name=@FILE uploads a local file for a URL parameter"
        ),
        Options.repeated
      ),
      webhook: Options.text("webhook").pipe(
        Options.withPseudoName("URL"),
        Options.withDescription("An http(s) URL that also receives the signed result"),
        Options.optional
      ),
      webhookEvents: Options.text("webhook-events").pipe(
        Options.withPseudoName("EVENTS"),
        Options.withDescription(
          "The events --webhook receives, comma-separated: start, output, logs, completed (default completed)"
        ),
        Options.optional
      ),
      priority: Options.integer("priority").pipe(
        Options.withPseudoName("N"),
        Options.withDescription(
          `How soon it is taken, ${Execution.PRIORITY_MIN} to ${Execution.PRIORITY_MAX} (default 0): each step goes before runs up to a minute older`
        ),
        Options.optional
      ),
      baseUrl: ApiAccess.baseUrl,
      key: ApiAccess.key
    },
    ({ app, positional, input, webhook, webhookEvents, priority, baseUrl, key }) =>
      Effect.scoped(Effect.gen(function*() {
        if (positional.length > 0) {
          return yield* new RunUsageError({ message: positionalInputsMessage(app, positional) })
        }
        const inputs = yield* parseInputs(input)
        const events = Option.isSome(webhookEvents)
          ? Option.some(yield* parseWebhookEvents(webhookEvents.value, webhook))
          : Option.none()
        const clients = yield* ApiAccess.clients(baseUrl, key)
        const { client } = clients
        const detail = yield* ApiAccess.firstRequest(
          baseUrl,
          clients,
          (c) => Effect.flatMap(c.apps.resolve(app), (appId) => c.apps.get(appId))
        ).pipe(
          Effect.catchIf(
            (error) => error instanceof ClientError.AppNameError && error.reason === "unknown",
            () =>
              Effect.flatMap(
                client.apps.list({ limit: 100 }),
                (known) => new RunUsageError({ message: AppNames.unknownMessage(app, known) })
              )
          )
        )
        const resolvedInputs = Object.values(inputs).some((value) => value.startsWith("@"))
          ? yield* uploadFiles(client, detail.parameters, inputs)
          : inputs
        const follower = yield* Follower.make({ live: options.live })
        const done = yield* follower.around(
          client.run(detail.appId, resolvedInputs, {
            onStarted: (started) => follower.following(started.executionId, `execution ${started.executionId} started`),
            onStatus: follower.onStatus,
            onEvent: follower.onEvent,
            ...(Option.isSome(webhook) ? { webhook: webhook.value } : {}),
            ...(Option.isSome(events) ? { webhookEvents: events.value } : {}),
            ...(Option.isSome(priority) ? { priority: priority.value } : {}),
            ...(options.interval === undefined ? {} : { interval: options.interval })
          })
        ).pipe(
          // Wrong inputs: the message and what the app takes, as one error the command reports once.
          Effect.catchIf(
            (error) => error instanceof ClientError.InvalidInputsError,
            (error) =>
              new RunUsageError({
                message: [error.message, `${detail.name} takes:`, ...describeParameters(error.parameters)].join("\n")
              })
          )
        )
        yield* follower.finish(done)
      }))
  ).pipe(Command.withDescription("Run an app through the HTTP API and print its outputs"))

/** `appexec run` with the defaults: the event stream (else polling every 3–5 s), redrawn in place on a terminal. */
export const runCommand = make()
