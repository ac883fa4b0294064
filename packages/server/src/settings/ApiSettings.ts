/**
 * The settings of the HTTP API (docs/cli.md#settings): where `serve` listens, what it serves and
 * its limits. A default is taken from the module that owns
 * the setting (`RateLimit.defaults`, the listener's `connectionDefaults`, the engine's
 * `AppexecConfig.defaults`), never written again here.
 */
import { Api } from "@appexec/api"
import { AppexecConfig } from "@appexec/core"
import { RateLimit } from "@appexec/http"
import { NodeListener } from "@appexec/platform-node"
import { Duration } from "effect"
import * as Setting from "./Setting.js"
import * as Values from "./Values.js"

const api: ReadonlyArray<Setting.Part> = ["api"]

const connections = NodeListener.connectionDefaults

/** The port `serve` listens on when `--port` is not given. */
export const defaultPort = 8080

/** The address `serve` listens on, and the admin port's, when not given. */
export const defaultHost = "127.0.0.1"

/** `--port N`. */
export const port = Setting.make({
  name: "port",
  description: "port to listen on (0: any free port)",
  parts: api,
  value: Values.port,
  default: defaultPort
})

/** `--host ADDR`. */
export const host = Setting.make({
  name: "host",
  description: "address to listen on (the admin port has its own, `--admin-host`)",
  parts: api,
  value: Values.text("ADDR"),
  default: defaultHost,
  hint: "the admin port's address is --admin-host"
})

/** `--no-worker`. */
export const noWorker = Setting.make({
  name: "no-worker",
  description: "serve HTTP only; executions run, webhooks go out and retention deletes in `appexec worker` " +
    "processes on the same database",
  parts: api,
  value: Values.toggle,
  default: false
})

/** `--no-console`. */
export const noConsole = Setting.make({
  name: "no-console",
  description: "do not serve the [console](./console.md) at `/console`; `GET /` then leads to `/docs`",
  parts: api,
  value: Values.toggle,
  default: false
})

/** `--apps DIR`: absent, the example apps shipped in `@appexec/server`. */
export const apps = Setting.make({
  name: "apps",
  description: "app definitions imported on the first start",
  parts: api,
  value: Values.optionalPath("DIR"),
  default: undefined,
  defaultText: "the example apps shipped in `@appexec/server` (`apps/`)"
})

/** `--rate-limit N`. */
export const rateLimit = Setting.make({
  name: "rate-limit",
  description: "requests per minute per client IP on `/v1`",
  parts: api,
  value: Values.count,
  default: RateLimit.defaults.limit
})

/** `--trust-proxy N`, read as text so that a bare `--trust-proxy` before another flag is named as such. */
export const trustProxy = Setting.make({
  name: "trust-proxy",
  description: "the number of proxies in front that append to `X-Forwarded-For` and that you trust: the client " +
    "IP is the entry N hops from the right",
  parts: api,
  value: Values.natural((text) => `give the number of proxies you trust, as in --trust-proxy 1 (got '${text}')`),
  default: RateLimit.defaults.trustProxy
})

/** `--max-streams-per-key N`. */
export const maxStreamsPerKey = Setting.make({
  name: "max-streams-per-key",
  description: "event streams ([live executions](api.md#live-executions)) one API key may hold open at once; " +
    "beyond, 429",
  parts: api,
  value: Values.count,
  default: AppexecConfig.defaults.maxStreamsPerKey
})

/** `--max-upload SIZE`. */
export const maxUpload = Setting.make({
  name: "max-upload",
  description: "the largest file `POST /v1/uploads` takes ([uploads](./api.md#uploads)): bytes, or a whole number " +
    "of `KiB`, `MiB` or `GiB`; a larger one answers 413",
  parts: api,
  value: Values.bytes,
  default: Api.DEFAULT_MAX_UPLOAD_BYTES
})

/** `--max-connections-per-ip N`. */
export const maxConnectionsPerIp = Setting.make({
  name: "max-connections-per-ip",
  description: "open connections one client address may hold (raise it behind a proxy; " +
    "[connections](./http.md#connections))",
  parts: api,
  value: Values.count,
  default: connections.maxConnectionsPerIp
})

/** `--max-connections N`. */
export const maxConnections = Setting.make({
  name: "max-connections",
  description: "open connections in all",
  parts: api,
  value: Values.count,
  default: connections.maxConnections
})

/** `--headers-timeout DURATION`. */
export const headersTimeout = Setting.make({
  name: "headers-timeout",
  description: "time a client has to send a request's headers",
  parts: api,
  value: Values.duration({ positive: true }),
  default: connections.headersTimeout
})

/** `--request-timeout DURATION`. */
export const requestTimeout = Setting.make({
  name: "request-timeout",
  description: "time a client has to send a whole request",
  parts: api,
  value: Values.duration({ positive: true }),
  default: connections.requestTimeout
})

/** `--keep-alive-timeout DURATION`. */
export const keepAliveTimeout = Setting.make({
  name: "keep-alive-timeout",
  description: "how long an idle keep-alive connection stays open",
  parts: api,
  value: Values.duration({ positive: true }),
  default: connections.keepAliveTimeout
})

/** `--stop-delay DURATION`. */
export const stopDelay = Setting.make({
  name: "stop-delay",
  description: "on SIGTERM or SIGINT, how long `/readyz` answers 503 while the listener still serves, so that a " +
    "load balancer stops sending before it closes (`5s` behind one; [stopping](./operations.md#stopping))",
  parts: api,
  value: Values.duration({ positive: false }),
  default: Duration.zero
})

/** The settings of the HTTP API, in the order docs/cli.md lists them. */
export const group = {
  port,
  host,
  noWorker,
  noConsole,
  apps,
  rateLimit,
  trustProxy,
  maxStreamsPerKey,
  maxUpload,
  maxConnectionsPerIp,
  maxConnections,
  headersTimeout,
  requestTimeout,
  keepAliveTimeout,
  stopDelay
}
