/**
 * `appexec run APP --input name=value … [--webhook URL] [--base-url URL] [--key KEY]`: runs an
 * app on an appexec service through `@appexec/client`, as an API consumer would. It reads the
 * app's parameters (APP is an app id or an exact app name), uploads the local files given to its
 * URL parameters as `name=@FILE` (`POST /v1/uploads`), checks the inputs against them,
 * starts one execution and follows it (its event stream, or polling on a server without one),
 * showing on stderr its status, queue position, the nodes' progress and their log lines
 * (`internal/LiveDisplay`: redrawn in place on a terminal, plain lines elsewhere), then prints
 * every output on stdout (text values, media URLs). A failed execution exits non-zero with its
 * error message; wrong inputs list the app's parameters.
 */
import type { App } from "@appexec/api"
import { AppexecClient, ClientError, type EventStream, Outputs, type Polling } from "@appexec/client"
import { MediaType } from "@appexec/core"
import { Args, Command, Options } from "@effect/cli"
import { Clock, Config, Console, Effect, Fiber, Option, Redacted, Schema, SynchronizedRef } from "effect"
import { readFile } from "node:fs/promises"
import * as LiveDisplay from "./internal/LiveDisplay.js"

export { formatElapsed } from "./internal/LiveDisplay.js"

/** The execution ended `failed`; the message is its `errorMessage`. */
export class RunFailed extends Schema.TaggedError<RunFailed>()("RunFailed", {
  executionId: Schema.String,
  message: Schema.String
}) {}

/** An `--input` that is not `name=value`, no API key, or inputs the app refuses (with what it takes). (An APP that names no app, or several, is the client's `AppNameError`.) */
export class RunUsageError extends Schema.TaggedError<RunUsageError>()("RunUsageError", {
  message: Schema.String
}) {}

/** What `run` says when it has no API key. */
export const noKeyMessage =
  "No API key: set APPEXEC_API_KEY or pass --key (the key `appexec serve` printed, or one from `appexec keys create`)."

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

/** The `run` command, to add to the `appexec` command's subcommands. */
export const make = (options: RunCommandOptions = {}) =>
  Command.make(
    "run",
    {
      app: Args.text({ name: "APP" }).pipe(Args.withDescription("The app's id, or its exact name")),
      input: Options.text("input").pipe(
        Options.withAlias("i"),
        Options.withDescription(
          "An input as name=value (repeat for each parameter); name=@FILE uploads a local file for a URL parameter"
        ),
        Options.repeated
      ),
      webhook: Options.text("webhook").pipe(
        Options.withDescription("An http(s) URL that also receives the signed result"),
        Options.optional
      ),
      baseUrl: Options.text("base-url").pipe(
        Options.withDescription("Where the service answers, without /v1"),
        Options.withFallbackConfig(Config.string("APPEXEC_BASE_URL")),
        Options.withDefault("http://127.0.0.1:8080")
      ),
      key: Options.redacted("key").pipe(
        Options.withDescription("A workspace API key (or APPEXEC_API_KEY)"),
        Options.withFallbackConfig(Config.redacted("APPEXEC_API_KEY")),
        // Missing from both, it is this command's own error, which names both.
        Options.optional
      )
    },
    ({ app, input, webhook, baseUrl, key }) =>
      Effect.gen(function*() {
        const inputs = yield* parseInputs(input)
        if (Option.isNone(key)) return yield* new RunUsageError({ message: noKeyMessage })
        const client = yield* AppexecClient.make({ baseUrl, apiKey: Redacted.value(key.value) })
        const appId = yield* client.apps.resolve(app)
        const resolvedInputs = Object.values(inputs).some((value) => value.startsWith("@"))
          ? yield* Effect.flatMap(client.apps.get(appId), (detail) => uploadFiles(client, detail.parameters, inputs))
          : inputs
        const tty = options.live ?? process.stderr.isTTY === true
        // A terminal that does not tell its width (0, as some pseudo-terminals do) is taken as 80 columns.
        const columns = process.stderr.columns ?? 0
        const mode: LiveDisplay.Mode = { tty, columns: columns > 0 ? columns : 80 }
        const startedAt = yield* Clock.currentTimeMillis
        const display = yield* SynchronizedRef.make(LiveDisplay.initial)

        /** Tells the display, and writes what it prints (in a pipe, line by line through the console). */
        const show = (event: LiveDisplay.Event) =>
          SynchronizedRef.updateEffect(display, (state) =>
            Effect.gen(function*() {
              const elapsed = (yield* Clock.currentTimeMillis) - startedAt
              const [next, text] = LiveDisplay.step(mode, state, event, elapsed)
              if (tty) yield* Effect.sync(() => process.stderr.write(text))
              else yield* Effect.forEach(text.split("\n").slice(0, -1), (line) => Console.error(line))
              return next
            }))
        const ticker = tty
          ? yield* Effect.fork(Effect.forever(Effect.zipRight(show({ _tag: "Tick" }), Effect.sleep("1 second"))))
          : undefined

        const onEvent = (event: EventStream.LiveEvent) =>
          event.event === "progress"
            ? show({ _tag: "Progress", progress: event.data })
            : event.event === "log"
            ? show({ _tag: "Log", line: event.data })
            : Effect.void

        const done = yield* client
          .run(appId, resolvedInputs, {
            onStatus: (execution) => show({ _tag: "Status", execution }),
            onEvent,
            ...(Option.isSome(webhook) ? { webhook: webhook.value } : {}),
            ...(options.interval === undefined ? {} : { interval: options.interval })
          })
          .pipe(
            Effect.ensuring(ticker === undefined ? Effect.void : Fiber.interrupt(ticker)),
            // Wrong inputs: the message and what the app takes, as one error the command reports once.
            Effect.catchIf(
              (error) => error instanceof ClientError.InvalidInputsError,
              (error) =>
                new RunUsageError({
                  message: [error.message, `App ${appId} takes:`, ...describeParameters(error.parameters)].join("\n")
                })
            )
          )

        yield* Console.error(
          `${done.status} in ${
            LiveDisplay.formatElapsed((yield* Clock.currentTimeMillis) - startedAt)
          } (execution ${done.executionId})`
        )
        for (const view of Outputs.all(done)) yield* Console.log(Outputs.describe(view))
        if (done.status === "failed") {
          return yield* new RunFailed({
            executionId: done.executionId,
            message: done.errorMessage ?? "The execution failed."
          })
        }
      })
  ).pipe(Command.withDescription("Run an app through the HTTP API and print its outputs"))

/** `appexec run` with the defaults: the event stream (else polling every 3–5 s), redrawn in place on a terminal. */
export const runCommand = make()
