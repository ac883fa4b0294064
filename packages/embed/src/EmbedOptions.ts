/**
 * What `createAppexec` takes (docs/embedding.md#options). Every option has a default: with none,
 * the instance keeps its data in `.appexec/appexec.db`, runs a worker, logs to the `console`,
 * serves the API at `/v1/…` of wherever its handler is mounted, and waits up to 10 s for running
 * executions when it closes.
 */
import type * as AppexecConfig from "@appexec/core/AppexecConfig"
import type * as AppexecLayer from "@appexec/core/AppexecLayer"
import type * as IdGenerator from "@appexec/core/IdGenerator"
import type * as MediaUrls from "@appexec/core/MediaUrls"
import type * as NodeType from "@appexec/core/NodeType"
import type * as OutboundHttp from "@appexec/core/OutboundHttp"
import type * as RateLimit from "@appexec/http/RateLimit"
import type { Duration, Layer } from "effect"
import type { StorageOption } from "./EmbedStorage.js"
import type { HostLogger, Level } from "./HostLogger.js"

/** How long `close()` waits for running executions before it hands them back (to run again): 10 seconds. */
export const DEFAULT_DRAIN = "10 seconds"

/** The workspace the instance acts as when no other is named: `default`, as the `appexec` command's. */
export const DEFAULT_WORKSPACE = "default"

/**
 * A layer of the services a host's node types need besides what the instance gives them (any
 * layer that needs nothing: a layer's output is contravariant, so each is a `Layer<never>`;
 * several are merged with `Layer.mergeAll`).
 */
export type Services = Layer.Layer<never, unknown, never>

/**
 * What the instance gives node types itself: the storage ports (the blob store among them), the
 * guarded outbound HTTP client, ids, the signed media URLs, the settings and the secrets.
 */
export type Given =
  | AppexecLayer.Storage
  | AppexecLayer.Provided
  | IdGenerator.IdGenerator
  | OutboundHttp.OutboundHttp
  | MediaUrls.MediaUrls

/** The services `Nodes` need that neither the instance nor `services` give. */
export type Missing<Nodes extends ReadonlyArray<NodeType.Any>, S extends Services> = Exclude<
  NodeType.NodeRequirements<Nodes[number]>,
  Given | Layer.Layer.Success<S>
>

/** The options of `createAppexec`. */
export interface Options<
  Nodes extends ReadonlyArray<NodeType.Any> = ReadonlyArray<NodeType.Any>,
  S extends Services = Layer.Layer<never>
> {
  /**
   * Where the data lives: `{ sqlite: "path/to.db" }` (default `.appexec/appexec.db` under the
   * working directory; the folder is created), `{ postgres: "postgres://…" }` (needs
   * `@appexec/postgres` installed), or `{ memory: true }` (tests: gone with the instance).
   */
  readonly storage?: StorageOption | undefined
  /**
   * Node types besides the core ones (`input.*`, `text.template`, `util.*`, `output.text`,
   * `output.json`): the host's own (`defineNode`) or the built-in ones of `@appexec/nodes`.
   */
  readonly nodes?: Nodes | undefined
  /**
   * A layer of the services `nodes` need that the instance does not give (for `@appexec/nodes`:
   * `Layer.merge(NodesSettings.layer(), ProviderOpenAI.layerFromEnv(process.env))`); a node type
   * whose services are given by no one does not compile.
   */
  readonly services?: S | undefined
  /**
   * The host's logger (`console`, pino, …): every line of appexec goes to it as a message and
   * its fields (default `console`; `false`: no line at all).
   */
  readonly logger?: HostLogger | false | undefined
  /** The least severe lines logged: `debug`, `info` (default), `warn` or `error`. */
  readonly logLevel?: Level | undefined
  /** Log one line per HTTP request (default true). */
  readonly logRequests?: boolean | undefined
  /**
   * How long `close()` waits for running executions to finish before it hands them back to the
   * queue, to run again in the next process (default 10 seconds; `0`: at once).
   */
  readonly drain?: Duration.DurationInput | undefined
  /**
   * The path the host mounts `handler` under, such as `/appexec` (default none): the endpoints
   * answer at `<basePath>/v1/…`, whether or not the host's framework strips the prefix.
   */
  readonly basePath?: string | undefined
  /**
   * The address clients reach the mounted API at, with its base path (`https://example.com/appexec`):
   * media URLs of outputs and uploads are made under it (default `http://localhost<basePath>`).
   */
  readonly publicUrl?: string | undefined
  /** Serve the console at `<basePath>/console` (default false). */
  readonly console?: boolean | undefined
  /** Serve `<basePath>/docs` (the API reference page) and `<basePath>/openapi.json` (default false). */
  readonly docs?: boolean | undefined
  /** Serve `<basePath>/healthz` and `<basePath>/readyz` (default false). */
  readonly health?: boolean | undefined
  /** Run executions and send webhooks in this process (default true); false for an API-only process. */
  readonly worker?: boolean | undefined
  /**
   * The name of this process in the operator views and in the leases its worker holds (default
   * `host:pid`; docs/operations.md#the-fleet).
   */
  readonly name?: string | undefined
  /**
   * Let outbound requests (webhooks, media URLs, provider calls) reach private, loopback and
   * link-local addresses (default false: refused).
   */
  readonly allowPrivateNetworks?: boolean | undefined
  /**
   * The master key that seals secrets and webhook signing keys at rest: 32 bytes as base64url,
   * base64 or hex. Default: on SQLite the `master.key` file beside the database (made on first
   * start), in memory a random one; on PostgreSQL none (secrets cannot be set without one).
   */
  readonly masterKey?: string | undefined
  /** The workspace the instance acts as where none is named (default `default`). */
  readonly workspace?: string | undefined
  /** The `/v1` rate limit per client IP (default 100 requests a minute; `trustProxy` for hosts behind proxies). */
  readonly rateLimit?: RateLimit.RateLimitOptions | undefined
  /** Any other setting of the instance (leases, timeouts, webhook retries, …; docs/architecture.md). */
  readonly config?: Partial<AppexecConfig.AppexecOptions> | undefined
}

/**
 * The requirement that node types needing more than the instance gives come with `services`
 * that give it: a type error names what is missing.
 */
export type ServicesCheck<Nodes extends ReadonlyArray<NodeType.Any>, S extends Services> = [Missing<Nodes, S>] extends
  [never] ? unknown
  : { readonly services: { readonly "the node types need services that `services` does not give": Missing<Nodes, S> } }
