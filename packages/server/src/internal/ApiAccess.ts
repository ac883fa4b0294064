/**
 * How the commands that act through the HTTP API (`run`, `executions watch`) reach the server:
 * `--base-url` (`APPEXEC_BASE_URL`) and `--key` (`APPEXEC_API_KEY`), a client, and what they say
 * when the server cannot be reached. The first request of a command goes through a client that
 * does not retry a refused connection, so that a server that is not running is said within a
 * second; every later request has the client's retries, so a server that restarts meanwhile is
 * waited for.
 */
import { AppexecClient, ClientError } from "@appexec/client"
import { Options } from "@effect/cli"
import { Config, Effect, Option, Redacted, Schema } from "effect"

/** A usage error of an API command: no key, an input that is not `name=value`, wrong inputs (with what the app takes), no such app or server. */
export class RunUsageError extends Schema.TaggedError<RunUsageError>()("RunUsageError", {
  message: Schema.String
}) {}

/** What an API command says when it has no API key. */
export const noKeyMessage =
  "No API key: set APPEXEC_API_KEY or pass --key (the key `appexec serve` printed, or one from `appexec keys create`)."

/** The default of `--base-url`. */
export const defaultBaseUrl = "http://127.0.0.1:8080"

/** `--base-url`. */
export const baseUrl = Options.text("base-url").pipe(
  Options.withPseudoName("URL"),
  Options.withDescription(`Where the service answers, without /v1 (or APPEXEC_BASE_URL; default ${defaultBaseUrl})`),
  Options.withFallbackConfig(Config.string("APPEXEC_BASE_URL")),
  Options.withDefault(defaultBaseUrl)
)

/** `--key`: missing from both flag and variable, it is the command's own error, which names both. */
export const key = Options.redacted("key").pipe(
  Options.withPseudoName("KEY"),
  Options.withDescription("A workspace API key (or APPEXEC_API_KEY)"),
  Options.withFallbackConfig(Config.redacted("APPEXEC_API_KEY")),
  Options.optional
)

/** What a command says when nothing answers at `url`. */
export const unreachableMessage = (url: string): string =>
  `No appexec server answers at ${url}; is \`appexec serve\` running? (Another address: APPEXEC_BASE_URL or --base-url.)`

/** True for a request that never reached a server: a refused connection, an unknown host. */
export const isUnreachable = (error: unknown): error is ClientError.NetworkError =>
  error instanceof ClientError.NetworkError && error.reason === "unreachable"

/** The two clients of a command: `first` for its first request (no retry of a refused connection), `client` for the rest. */
export interface Clients {
  readonly first: AppexecClient.AppexecClientService
  readonly client: AppexecClient.AppexecClientService
}

/** The clients for `url` and the key, or the command's error when it has no key. */
export const clients = (
  url: string,
  apiKey: Option.Option<Redacted.Redacted<string>>
): Effect.Effect<Clients, RunUsageError> =>
  Effect.gen(function*() {
    if (Option.isNone(apiKey)) return yield* new RunUsageError({ message: noKeyMessage })
    const config = { baseUrl: url, apiKey: Redacted.value(apiKey.value) }
    return {
      first: yield* AppexecClient.make({ ...config, retry: { maxRetries: 0 } }),
      client: yield* AppexecClient.make(config)
    }
  })

/**
 * The first request of a command: through `first`, and when it got no answer because nothing
 * listens, the command's error saying so; a failure the client would have retried (no answer, a
 * 429, a 5xx) is tried again through `client`, with its retries.
 */
export const firstRequest = <A, E>(
  url: string,
  { client, first }: Clients,
  request: (client: AppexecClient.AppexecClientService) => Effect.Effect<A, E>
): Effect.Effect<A, E | RunUsageError> =>
  request(first).pipe(
    Effect.catchAll((error): Effect.Effect<A, E | RunUsageError> =>
      isUnreachable(error)
        ? Effect.fail(new RunUsageError({ message: unreachableMessage(url) }))
        : isRetried(error)
        ? request(client)
        : Effect.fail(error)
    )
  )

/** A failure the client retries: no answer, or a 429 or 5xx answer. */
const isRetried = (error: unknown): boolean =>
  error instanceof ClientError.NetworkError ||
  (error instanceof ClientError.ApiError && (error.status === 429 || error.status >= 500))
