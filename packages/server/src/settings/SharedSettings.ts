/**
 * The settings the API and the workers read alike (docs/cli.md#settings): where produced media
 * live and at which URLs, the admin port, and the outbound address policy — one setting that
 * every process applies the same way, so that a webhook URL the API accepts is one the worker
 * may deliver to.
 */
import { AddressPolicy } from "@appexec/platform-node"
import { Either } from "effect"
import * as MediaStorage from "../MediaStorage.js"
import { defaultHost } from "./ApiSettings.js"
import type * as Resolve from "./Resolve.js"
import * as Setting from "./Setting.js"
import * as Values from "./Values.js"

const both: ReadonlyArray<Setting.Part> = ["api", "worker"]

/** `--public-url URL`. */
export const publicUrl = Setting.make({
  name: "public-url",
  description: "the URL clients reach the API at (behind a proxy or from another host): `serve` prints it, and " +
    "the signed media URLs every process hands out start with it",
  parts: both,
  value: Values.url,
  default: undefined,
  defaultText: "`serve`: the listening address; `worker`: `http://127.0.0.1:8080`"
})

/** `--media-base-url URL`. */
export const mediaBaseUrl = Setting.make({
  name: "media-base-url",
  description: "public base URL of produced media (CDN, object storage): media URLs become `<URL>/<key>` and " +
    "`serve` answers none",
  parts: both,
  value: Values.url,
  default: undefined
})

/** `--media s3://BUCKET/PREFIX` (also `prune`'s). */
export const media = Setting.make<MediaStorage.Location | undefined>({
  name: "media",
  description: "keep produced media in an S3-compatible bucket, under the prefix, instead of `<data>/media` (or " +
    "the database on PostgreSQL); region and credentials from the usual `AWS_*` variables; checked at start " +
    "([media](./media.md#an-s3-compatible-bucket))",
  parts: both,
  value: {
    pseudo: "s3://BUCKET/PREFIX",
    toggle: false,
    read: (text) => (Values.saysNone(text) ? Either.right(undefined) : MediaStorage.parseLocation(text)),
    show: (location) =>
      location === undefined ? "none" : `s3://${location.bucket}${location.prefix === "" ? "" : `/${location.prefix}`}`
  },
  default: undefined
})

/** `--media-endpoint URL`. */
export const mediaEndpoint = Setting.make({
  name: "media-endpoint",
  description: "the endpoint of an S3-compatible server (R2, MinIO, …), reached path-style",
  parts: both,
  value: Values.url,
  default: undefined,
  defaultText: "none (AWS S3)"
})

/** `--media-direct`. */
export const mediaDirect = Setting.make({
  name: "media-direct",
  description: "output media URLs are presigned GET URLs of the bucket, valid as long as signed URLs (7 days), " +
    "instead of this server's `/media/…` URLs",
  parts: both,
  value: Values.toggle,
  default: false
})

/** `--admin-port N`: off when absent. */
export const adminPort = Setting.make({
  name: "admin-port",
  description: "serve Prometheus metrics at `/metrics`, `/healthz` and `/readyz` on this port of `--admin-host` " +
    "([operations](./operations.md#metrics)); on `serve` also the operator views at `/console` with their " +
    "endpoints under `/operator`, no key: keep the port private ([operator views](./operations.md#operator-views))",
  parts: both,
  value: Values.optionalPort,
  default: undefined,
  defaultText: "off"
})

/** `--admin-host ADDR`: the admin port's own address, whatever `--host` is. */
export const adminHost = Setting.make({
  name: "admin-host",
  description: "address of the admin port, whatever `--host` is: keep it on loopback or a private network",
  parts: both,
  value: Values.text("ADDR"),
  default: defaultHost
})

/** `--admin-actions`. */
export const adminActions = Setting.make({
  name: "admin-actions",
  description:
    "let the operator views of `--admin-port` act (redeliver failed webhooks), from the admin port's own page " +
    "with its anti-forgery token only; read-only without it",
  parts: ["api"],
  value: Values.toggle,
  default: false,
  hint: "a worker's admin port serves no operator views"
})

/** `--admin-allowed-hosts NAMES`. */
export const adminAllowedHosts = Setting.make({
  name: "admin-allowed-hosts",
  description: "host names (comma-separated, `name` or `name:port`) the operator views also answer besides the " +
    "admin port's address and `localhost`; any other `Host` is refused (`403`) against DNS rebinding " +
    "([operator views](./operations.md#operator-views))",
  parts: ["api"],
  value: Values.list("NAMES", (name) => Values.text("NAME").read(name), (name) => name),
  default: [],
  hint: "a worker's admin port serves no operator views"
})

/** `--allow-private-networks`. */
export const allowPrivateNetworks = Setting.make({
  name: "allow-private-networks",
  description: "let media fetches, `http.request` nodes, provider calls and webhooks reach private and loopback " +
    "addresses (local development); the API checks webhook URLs by it too",
  parts: both,
  value: Values.toggle,
  default: false
})

/** `--allow-hosts LIST`: the allow-list beside `--allow-private-networks`. */
export const allowHosts = Setting.make({
  name: "allow-hosts",
  description: "hosts outbound requests may reach even at a private or loopback address (comma-separated, " +
    "`name`, `name:port`, an IP address or `[IPv6]:port`; without a port, any): the receivers and services of " +
    "your own network, and nothing else of it",
  parts: both,
  value: Values.list(
    "HOSTS",
    AddressPolicy.parseAllowedHost,
    (entry) => (entry.port === undefined ? entry.host : `${entry.host}:${entry.port}`)
  ),
  default: []
})

/** The media settings in force, as `MediaStorage.fromSettings` checks them. */
export const mediaOf = (settings: Resolve.Resolved) => ({
  media: settings.get(media),
  mediaEndpoint: settings.get(mediaEndpoint),
  mediaDirect: settings.get(mediaDirect),
  mediaBaseUrl: settings.get(mediaBaseUrl)
})

/** Where media live and at which URLs. */
export const mediaGroup = { publicUrl, mediaBaseUrl, media, mediaEndpoint, mediaDirect }

/** The admin port. */
export const adminGroup = { adminPort, adminHost, adminActions, adminAllowedHosts }

/** The outbound address policy. */
export const outboundGroup = { allowPrivateNetworks, allowHosts }
