/**
 * `appexec serve`: the standalone service on SQLite. On the first start with an empty data
 * directory it bootstraps (see `Bootstrap`) and prints the base URL, the key (once) and a curl
 * line. It logs one line per request and per execution transition, and on SIGINT/SIGTERM it
 * stops accepting requests, drains the worker and exits.
 */
import { AppexecHttp } from "@appexec/http"
import type { SigningKeyJwk } from "@appexec/core"
import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Console, Context, Effect, Layer, Option } from "effect"
import { existsSync, mkdirSync } from "node:fs"
import { createServer } from "node:http"
import * as Bootstrap from "./Bootstrap.js"
import * as ExecutionLog from "./ExecutionLog.js"
import * as Instance from "./Instance.js"
import * as Media from "./Media.js"

/** The settings of `serve` (DESIGN §6). */
export interface ServeOptions {
  readonly port: number
  readonly host: string
  readonly dataDir: string
  readonly appsDir: string
  readonly allowPrivateNetworks: boolean
  readonly rateLimit: number
  readonly trustProxy: boolean
  readonly webhookRetryDelaysMs: ReadonlyArray<number>
  /** How long a rotated-out signing key stays published (default: the core default, 7 days). */
  readonly signingKeyGraceMs?: number | undefined
  /** The webhook signing key given by the operator; generated and stored when absent. */
  readonly signingKeyJwk?: SigningKeyJwk.PrivateJwk | undefined
  /** Public base URL of produced media (CDN, object storage); absent: signed URLs served at `/media/…`. */
  readonly mediaBaseUrl?: string | undefined
}

/** The base URL a client on this machine uses. */
export const baseUrlOf = (host: string, port: number) => {
  const reachable = host === "0.0.0.0" || host === "::" || host === "" ? "127.0.0.1" : host
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`
}

/** Serves until interrupted. */
export const serve = (options: ServeOptions) =>
  Effect.gen(function* () {
    yield* Effect.sync(() => mkdirSync(options.dataDir, { recursive: true }))
    const fresh = !existsSync(Instance.databaseFile(options.dataDir))
    // Listen first: the media URLs an execution hands out need the address, also with port 0.
    const server = yield* Layer.build(NodeHttpServer.layer(() => createServer(), { port: options.port, host: options.host }))
    const address = Context.get(server, HttpServer.HttpServer).address
    const baseUrl = baseUrlOf(options.host, address._tag === "TcpAddress" ? address.port : options.port)

    const program = Effect.gen(function* () {
      const first = fresh ? Option.some(yield* Bootstrap.run(options.appsDir)) : Option.none()
      yield* ExecutionLog.run
      // The API and, beside /v1, the signed media URLs of the instance (`MediaRoute`).
      const app = yield* AppexecHttp.make({
        rateLimit: { limit: options.rateLimit, trustProxy: options.trustProxy }
      })
      yield* HttpServer.serveEffect(app).pipe(Effect.provide(server))
      yield* Console.log(`appexec is listening on ${baseUrl} (data: ${options.dataDir})`)
      if (Option.isSome(first)) {
        const { key, apps } = first.value
        yield* Console.log(`Imported ${apps.length} public app(s): ${apps.map((a) => a.name).join(", ") || "none"}.`)
        yield* Console.log(`API key of workspace "default" (shown once, keep it): ${key}`)
        yield* Console.log(`Try it:\n  curl -H 'x-api-key: ${key}' ${baseUrl}/v1/apps`)
      } else {
        yield* Console.log(`Create an API key with: appexec keys create --workspace default --data ${options.dataDir}`)
      }
      return yield* Effect.never
    })
    return yield* program.pipe(
      Effect.provide(
        Instance.layer({
          dataDir: options.dataDir,
          background: true,
          mediaUrls: Media.urlsLayer({ baseUrl, dataDir: options.dataDir, publicBaseUrl: options.mediaBaseUrl }),
          config: {
            allowPrivateNetworks: options.allowPrivateNetworks,
            webhookRetryDelaysMs: options.webhookRetryDelaysMs,
            ...(options.signingKeyGraceMs === undefined ? {} : { signingKeyGraceMs: options.signingKeyGraceMs }),
            ...(options.signingKeyJwk === undefined ? {} : { signingKeyJwk: options.signingKeyJwk })
          }
        })
      )
    )
  }).pipe(Effect.scoped)
