/**
 * The `appexec` command (docs/cli.md): `serve` and the admin commands. Every flag also reads an
 * `APPEXEC_*` environment variable. Admin commands print only their result on stdout (logs go to
 * stderr) and run against the same database as `serve` (SQLite under `--data`, or PostgreSQL with
 * `--database`), also while it runs.
 */
import { type Ids } from "@appexec/api"
import { Appexec, SigningKeys } from "@appexec/core"
import { Args, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Config, Console, Effect, Either, Option, Schema } from "effect"
import { readFile } from "node:fs/promises"
import { resolve } from "node:path"
import { fileURLToPath } from "node:url"
import * as Database from "./Database.js"
import * as Instance from "./Instance.js"
import { runCommand } from "./RunCommand.js"
import { serve } from "./Serve.js"
import { work } from "./WorkerProcess.js"

/** The example apps shipped with this package (`apps/`), imported on the first start when `--apps` is not given. */
export const defaultAppsDir = fileURLToPath(new URL("../apps", import.meta.url))

/** Parses `5s,30s,2m` (units ms, s, m, h, d) into milliseconds. */
export const parseDelays = (text: string): Option.Option<ReadonlyArray<number>> => {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
  const parts = text.split(",").map((p) => p.trim()).filter((p) => p !== "")
  const delays = parts.map((p) => {
    const match = /^(\d+)(ms|s|m|h|d)$/.exec(p)
    return match === null ? Number.NaN : Number(match[1]) * units[match[2]!]!
  })
  return delays.every(Number.isFinite) ? Option.some(delays) : Option.none()
}

const data = Options.directory("data").pipe(
  Options.withDescription("Directory of the SQLite database"),
  Options.withFallbackConfig(Config.string("APPEXEC_DATA")),
  Options.withDefault("./.appexec"),
  Options.map((dir) => resolve(dir))
)

const port = Options.integer("port").pipe(
  Options.withDescription("Port to listen on (0 picks a free one)"),
  Options.withFallbackConfig(Config.integer("APPEXEC_PORT")),
  Options.withDefault(8080)
)

const host = Options.text("host").pipe(
  Options.withDescription("Address to listen on"),
  Options.withFallbackConfig(Config.string("APPEXEC_HOST")),
  Options.withDefault("127.0.0.1")
)

const apps = Options.directory("apps").pipe(
  Options.withDescription("Directory of app definitions (*.json) imported as public apps on the first start"),
  Options.withFallbackConfig(Config.string("APPEXEC_APPS")),
  Options.withDefault(defaultAppsDir),
  Options.map((dir) => resolve(dir))
)

const allowPrivateNetworks = Options.boolean("allow-private-networks").pipe(
  Options.withDescription("Let outbound requests (media, webhooks) reach private and loopback addresses"),
  Options.withFallbackConfig(Config.boolean("APPEXEC_ALLOW_PRIVATE_NETWORKS"))
)

const rateLimit = Options.integer("rate-limit").pipe(
  Options.withDescription("Requests per minute per client IP on /v1"),
  Options.withFallbackConfig(Config.integer("APPEXEC_RATE_LIMIT")),
  Options.withDefault(100),
  Options.mapEffect((n) =>
    n >= 1
      ? Effect.succeed(n)
      : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--rate-limit: ${n} is not a positive number`)))
  )
)

const maxRunningPerWorkspace = Options.integer("max-running-per-workspace").pipe(
  Options.withDescription("Most executions of one workspace running at once (default: no cap)"),
  Options.withFallbackConfig(Config.integer("APPEXEC_MAX_RUNNING_PER_WORKSPACE")),
  Options.optional,
  Options.mapEffect((n) =>
    Option.isNone(n) || n.value >= 1
      ? Effect.succeed(n)
      : Effect.fail(
        ValidationError.invalidValue(HelpDoc.p(`--max-running-per-workspace: ${n.value} is not a positive number`))
      )
  )
)

const trustProxy = Options.integer("trust-proxy").pipe(
  Options.withDescription(
    "Proxies in front that append to X-Forwarded-For and that you trust: the client IP is the entry that many hops back"
  ),
  Options.withFallbackConfig(Config.integer("APPEXEC_TRUST_PROXY")),
  Options.withDefault(0),
  Options.mapEffect((n) =>
    n >= 0
      ? Effect.succeed(n)
      : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--trust-proxy: ${n} is not a number of proxies`)))
  )
)

/** A whole-number option of at least 1, with its variable and default. */
const countOption = (name: string, variable: string, fallback: number, description: string) =>
  Options.integer(name).pipe(
    Options.withDescription(description),
    Options.withFallbackConfig(Config.integer(variable)),
    Options.withDefault(fallback),
    Options.mapEffect((n) =>
      n >= 1
        ? Effect.succeed(n)
        : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: ${n} is not positive`)))
    )
  )

/** One duration option such as `10s` (units ms, s, m, h, d), in milliseconds, with its variable and default. */
const durationOption = (name: string, variable: string, fallback: string, description: string) =>
  Options.text(name).pipe(
    Options.withDescription(description),
    Options.withFallbackConfig(Config.string(variable)),
    Options.withDefault(fallback),
    Options.mapEffect((text) => {
      const parsed = parseDelays(text)
      return Option.isSome(parsed) && parsed.value.length === 1 && parsed.value[0]! > 0
        ? Effect.succeed(parsed.value[0]!)
        : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: '${text}' is not a duration like 10s`)))
    })
  )

/** The connection limits of `serve` (docs/cli.md). */
const connections = {
  maxConnections: countOption("max-connections", "APPEXEC_MAX_CONNECTIONS", 10_000, "Open connections in all"),
  maxConnectionsPerIp: countOption(
    "max-connections-per-ip",
    "APPEXEC_MAX_CONNECTIONS_PER_IP",
    100,
    "Open connections per client address (raise it behind a proxy)"
  ),
  headersTimeout: durationOption("headers-timeout", "APPEXEC_HEADERS_TIMEOUT", "10s", "Time to send request headers"),
  requestTimeout: durationOption("request-timeout", "APPEXEC_REQUEST_TIMEOUT", "30s", "Time to send a whole request"),
  keepAliveTimeout: durationOption(
    "keep-alive-timeout",
    "APPEXEC_KEEP_ALIVE_TIMEOUT",
    "5s",
    "How long an idle keep-alive connection stays open"
  )
}

/** How long claims last: of an execution by a worker, of a webhook delivery by a dispatcher (docs/cli.md). */
const claims = {
  lease: durationOption("lease", "APPEXEC_LEASE", "30s", "How long a worker's claim on an execution lasts unrenewed"),
  maxAttempts: countOption("max-attempts", "APPEXEC_MAX_ATTEMPTS", 3, "Claims an execution may use up"),
  webhookTimeout: durationOption("webhook-timeout", "APPEXEC_WEBHOOK_TIMEOUT", "10s", "Time a receiver has"),
  webhookClaimMargin: durationOption(
    "webhook-claim-margin",
    "APPEXEC_WEBHOOK_CLAIM_MARGIN",
    "30s",
    "How long a claim on a delivery outlasts the webhook timeout"
  )
}

const webhookRetryDelays = Options.text("webhook-retry-delays").pipe(
  Options.withDescription("Waits before webhook retries, e.g. 5s,30s,2m"),
  Options.withFallbackConfig(Config.string("APPEXEC_WEBHOOK_RETRY_DELAYS")),
  Options.withDefault("5s,30s,2m"),
  Options.mapEffect((text) =>
    Option.match(parseDelays(text), {
      onNone: () =>
        Effect.fail(
          ValidationError.invalidValue(HelpDoc.p(`--webhook-retry-delays: '${text}' is not a list like 5s,30s,2m`))
        ),
      onSome: (delays) => Effect.succeed(delays)
    })
  )
)

/** One duration such as `30d`, `12h` or `90m`, in milliseconds, or why not. */
const durationOf = (name: string, text: string) => {
  const parsed = parseDelays(text)
  return Option.isSome(parsed) && parsed.value.length === 1
    ? Effect.succeed(parsed.value[0]!)
    : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: '${text}' is not a duration like 30d or 12h`)))
}

const retention = Options.text("retention").pipe(
  Options.withDescription(
    "Delete finished executions (with their webhook deliveries and media) this long after they end, e.g. 30d"
  ),
  Options.withFallbackConfig(Config.string("APPEXEC_RETENTION")),
  Options.withDefault("30d"),
  Options.mapEffect((text) => durationOf("retention", text))
)

const adminPort = Options.integer("admin-port").pipe(
  Options.withDescription(
    "Serve Prometheus metrics at /metrics (and /healthz) on this port, on --host; off by default"
  ),
  Options.withFallbackConfig(Config.integer("APPEXEC_ADMIN_PORT")),
  Options.optional,
  Options.mapEffect((port) =>
    Option.isSome(port) && (port.value < 0 || port.value > 65535)
      ? Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--admin-port: ${port.value} is not a port`)))
      : Effect.succeed(port)
  )
)

/** An optional http(s) URL option with its variable; a trailing slash is dropped. */
const urlOption = (name: string, variable: string, description: string) =>
  Options.text(name).pipe(
    Options.withDescription(description),
    Options.withFallbackConfig(Config.string(variable)),
    Options.optional,
    Options.mapEffect((url) =>
      Option.isSome(url) && !/^https?:\/\/[^/]/.test(url.value)
        ? Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: '${url.value}' is not an http(s) URL`)))
        : Effect.succeed(Option.map(url, (u) => u.replace(/\/+$/, "")))
    )
  )

const publicUrl = urlOption(
  "public-url",
  "APPEXEC_PUBLIC_URL",
  "The URL clients reach this server at (behind a proxy, on another host): printed, and the base of signed media URLs"
)

const mediaBaseUrl = urlOption(
  "media-base-url",
  "APPEXEC_MEDIA_BASE_URL",
  "Public base URL of produced media (CDN, object storage): media URLs become <URL>/<key> and serve answers none"
)

/** `--grace` of `signing-key rotate` (and `--signing-key-grace` of `serve`): one duration such as `7d` or `12h`. */
const signingKeyGrace = (name: string) =>
  Options.text(name).pipe(
    Options.withDescription("How long a rotated-out signing key stays in the published key set, e.g. 7d, 12h"),
    Options.withFallbackConfig(Config.string("APPEXEC_SIGNING_KEY_GRACE")),
    Options.withDefault("7d"),
    Options.mapEffect((text) => {
      const parsed = parseDelays(text)
      return Option.isSome(parsed) && parsed.value.length === 1
        ? Effect.succeed(parsed.value[0]!)
        : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: '${text}' is not a duration like 7d or 12h`)))
    })
  )

const signingKeyJwk = Options.text("signing-key-jwk").pipe(
  Options.withDescription(
    "The webhook signing key as a private Ed25519 JWK (JSON with kty, crv, d); generated when absent"
  ),
  Options.withFallbackConfig(Config.string("APPEXEC_SIGNING_KEY_JWK")),
  Options.optional,
  Options.mapEffect((text) => {
    if (Option.isNone(text)) return Effect.succeed(Option.none())
    const invalid = (why: string) =>
      Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--signing-key-jwk: not a private Ed25519 JWK (${why})`)))
    const jwk = Schema.decodeUnknownEither(Schema.parseJson(SigningKeys.PrivateJwk))(text.value)
    if (Either.isLeft(jwk)) return invalid("expected JSON with kty OKP, crv Ed25519 and d")
    const usable = SigningKeys.fromPrivateJwk(jwk.right)
    return Either.isLeft(usable) ? invalid(usable.left) : Effect.succeed(Option.some(jwk.right))
  })
)

/** A command could not do what it was asked; `message` says why, for the operator. */
export class CommandFailed extends Schema.TaggedError<CommandFailed>()("CommandFailed", {
  message: Schema.String
}) {}

/** Runs an admin action on the instance of `dataDir` or `database`, without a worker. */
const admin = <A, E>(dataDir: string, database: Database.Database, action: Effect.Effect<A, E, Appexec.Appexec>) =>
  action.pipe(Effect.provide(Instance.layer({ dataDir, database, background: false })))

const database = Database.options

const serveCommand = Command.make(
  "serve",
  {
    port,
    host,
    data,
    database,
    noWorker: Options.boolean("no-worker").pipe(
      Options.withDescription("Serve HTTP only: executions run in `appexec worker` processes on the same database"),
      Options.withFallbackConfig(Config.boolean("APPEXEC_NO_WORKER"))
    ),
    apps,
    allowPrivateNetworks,
    rateLimit,
    trustProxy,
    maxRunningPerWorkspace,
    webhookRetryDelays,
    mediaBaseUrl,
    publicUrl,
    signingKeyGrace: signingKeyGrace("signing-key-grace"),
    signingKeyJwk,
    adminPort,
    retention,
    ...connections,
    ...claims
  },
  (o) =>
    serve({
      port: o.port,
      host: o.host,
      dataDir: o.data,
      database: o.database,
      worker: !o.noWorker,
      appsDir: o.apps,
      allowPrivateNetworks: o.allowPrivateNetworks,
      rateLimit: o.rateLimit,
      trustProxy: o.trustProxy,
      maxRunningPerWorkspace: Option.getOrUndefined(o.maxRunningPerWorkspace),
      webhookRetryDelays: o.webhookRetryDelays,
      mediaBaseUrl: Option.getOrUndefined(o.mediaBaseUrl),
      publicUrl: Option.getOrUndefined(o.publicUrl),
      signingKeyGrace: o.signingKeyGrace,
      signingKeyJwk: Option.getOrUndefined(o.signingKeyJwk),
      adminPort: Option.getOrUndefined(o.adminPort),
      retention: o.retention,
      claims: {
        lease: o.lease,
        maxAttempts: o.maxAttempts,
        webhookTimeout: o.webhookTimeout,
        webhookClaimMargin: o.webhookClaimMargin
      },
      connections: {
        maxConnections: o.maxConnections,
        maxConnectionsPerIp: o.maxConnectionsPerIp,
        headersTimeout: o.headersTimeout,
        requestTimeout: o.requestTimeout,
        keepAliveTimeout: o.keepAliveTimeout
      }
    })
).pipe(Command.withDescription("Run the appexec service (HTTP, worker and webhooks) on SQLite or PostgreSQL"))

const workerConcurrency = Options.integer("concurrency").pipe(
  Options.withDescription("Executions this process runs at once"),
  Options.withFallbackConfig(Config.integer("APPEXEC_WORKER_CONCURRENCY")),
  Options.withDefault(4),
  Options.mapEffect((n) =>
    n >= 1
      ? Effect.succeed(n)
      : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--concurrency: ${n} is not a positive number`)))
  )
)

const workerCommand = Command.make(
  "worker",
  {
    data,
    database,
    concurrency: workerConcurrency,
    maxRunningPerWorkspace,
    ...claims,
    allowPrivateNetworks,
    webhookRetryDelays,
    mediaBaseUrl,
    publicUrl,
    signingKeyGrace: signingKeyGrace("signing-key-grace"),
    signingKeyJwk,
    adminPort,
    host
  },
  (o) =>
    work({
      dataDir: o.data,
      database: o.database,
      concurrency: o.concurrency,
      maxRunningPerWorkspace: Option.getOrUndefined(o.maxRunningPerWorkspace),
      claims: {
        lease: o.lease,
        maxAttempts: o.maxAttempts,
        webhookTimeout: o.webhookTimeout,
        webhookClaimMargin: o.webhookClaimMargin
      },
      allowPrivateNetworks: o.allowPrivateNetworks,
      webhookRetryDelays: o.webhookRetryDelays,
      // Media URLs name the API, which this process does not serve.
      publicUrl: Option.getOrElse(o.publicUrl, () => "http://127.0.0.1:8080"),
      mediaBaseUrl: Option.getOrUndefined(o.mediaBaseUrl),
      signingKeyGrace: o.signingKeyGrace,
      signingKeyJwk: Option.getOrUndefined(o.signingKeyJwk),
      adminPort: Option.getOrUndefined(o.adminPort),
      host: o.host
    })
).pipe(
  Command.withDescription(
    "Run executions and deliver webhooks, with no HTTP, beside `serve --no-worker` on the same database"
  )
)

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
  { data, database, grace: signingKeyGrace("grace") },
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

const pruneCommand = Command.make(
  "prune",
  {
    data,
    database,
    retention: retention.pipe(
      Options.withDescription("Delete finished executions that ended longer ago than this, e.g. 30d")
    )
  },
  ({ data, database, retention }) =>
    admin(
      data,
      database,
      Effect.flatMap(Appexec.Appexec, (a) => a.operator.prune({ olderThan: retention })).pipe(
        Effect.flatMap((deleted) => Console.log(`deleted ${deleted}`))
      )
    )
).pipe(
  Command.withDescription(
    "Delete finished executions past the retention now, with their webhook deliveries and media; prints how many"
  )
)

/** The whole command tree. */
export const command = Command.make("appexec").pipe(
  Command.withDescription("appexec: asynchronous app execution service"),
  Command.withSubcommands([
    serveCommand,
    workerCommand,
    Command.make("workspaces").pipe(Command.withSubcommands([workspacesCreate])),
    Command.make("keys").pipe(Command.withSubcommands([keysCreate, keysRevoke])),
    Command.make("apps").pipe(Command.withSubcommands([appsImport, appsList])),
    Command.make("executions").pipe(
      Command.withDescription("Executions, for operators"),
      Command.withSubcommands([executionsList, executionsCancel])
    ),
    Command.make("signing-key").pipe(Command.withSubcommands([signingKeyRotate])),
    pruneCommand,
    runCommand
  ])
)

/** Runs the command on `argv` (as `process.argv`). */
export const run = Command.run(command, { name: "appexec", version: "0.1.0" })
