/**
 * The Node implementation of core's `OutboundHttp` port: http and https only; the host
 * is resolved once, every resolved address is checked against `AddressPolicy`, and the socket
 * connects to the address that was checked (the name stays in `Host` and in TLS SNI and
 * certificate checks), so a second DNS answer cannot slip a private address in. Hosts of an
 * allow-list (`allowHosts`) are reached whatever their addresses; a refusal names the process
 * that refused and the settings that would allow it (`naming`). Redirects are
 * returned, never followed; the whole exchange is bounded in time and the answer in size.
 * Connections are kept alive in pools keyed by the checked address (`AgentPool`), so repeated
 * requests to one receiver (webhooks) skip the connection setup without ever reaching an
 * address that was not checked.
 * Errors carry a consumer-safe `message` (the category only) and the operator's `detail`, which
 * is logged here as a warning.
 */
import { OutboundHttp } from "@appexec/core"
import { Effect, Either, Layer, Option } from "effect"
import * as dns from "node:dns/promises"
import * as http from "node:http"
import * as https from "node:https"
import { isIP, type LookupFunction } from "node:net"
import {
  type AddressClass,
  type AllowedHost,
  classify,
  hostPortOf,
  isAllowedHost,
  withArticle
} from "./AddressPolicy.js"

type OutboundError = OutboundHttp.OutboundError
type OutboundRequest = OutboundHttp.OutboundRequest
type OutboundResponse = OutboundHttp.OutboundResponse
const { OutboundError } = OutboundHttp

/** One address a host name resolves to. */
export interface ResolvedAddress {
  readonly address: string
  readonly family: 4 | 6
}

/** Resolves a host name to its addresses; injectable so tests can answer with any address. */
export type Resolver = (hostname: string) => Effect.Effect<ReadonlyArray<ResolvedAddress>, OutboundError>

/** The operating system's resolver (`dns.lookup`, every address). */
export const systemResolver: Resolver = (hostname) =>
  Effect.tryPromise({
    try: () => dns.lookup(hostname, { all: true, verbatim: true }),
    catch: (cause) => fail("dns", `${hostname} could not be resolved (${codeOf(cause)}).`)
  }).pipe(
    Effect.map((answers) => answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }) as const))
  )

/** How the client behaves. */
export interface Options {
  /** Let requests reach loopback, private, link-local and other non-public addresses. */
  readonly allowPrivateNetworks: boolean
  /**
   * Hosts requests may reach whatever their addresses, as `AddressPolicy.parseAllowedHost` reads
   * them (`hooks.internal:8443`): the narrow way to let a deployment reach its own receivers.
   */
  readonly allowHosts?: ReadonlyArray<AllowedHost>
  /** How a refusal names who refused and what would allow it (default: the `appexec` command's flags). */
  readonly naming?: Naming
  /** Host name resolution (default `systemResolver`). */
  readonly resolver?: Resolver
  /** Time limit of a request that sets none (default 10 s). */
  readonly timeoutMs?: number
  /** Largest answer body of a request that sets none (default 1 MiB). */
  readonly maxResponseBytes?: number
}

/** The words of a refusal: the process that refused, and the two settings that would allow the host. */
export interface Naming {
  /** `appexec worker`, `appexec serve --no-worker`, … */
  readonly process: string
  /** The allow-list setting, `--allow-hosts`. */
  readonly allowHosts: string
  /** The setting that opens every private network, `--allow-private-networks`. */
  readonly allowPrivateNetworks: string
}

/** The naming of a client whose host says nothing more: the `appexec` command's words. */
const defaultNaming: Naming = {
  process: "appexec",
  allowHosts: "--allow-hosts",
  allowPrivateNetworks: "--allow-private-networks"
}

/** What would allow `url`'s host, in the words of `naming`. */
const onlyWhenAllowed = (naming: Naming, url: URL) =>
  `only when allowed: ${naming.allowHosts} ${hostPortOf(url)}, or ${naming.allowPrivateNetworks}`

/** Defaults of the bounds. */
export const DEFAULT_TIMEOUT_MS = 10_000
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024

const codeOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : cause instanceof Error
    ? cause.message
    : String(cause)

/** What a consumer may see of each failure: the category, nothing about the network behind it. */
const consumerMessage: Record<OutboundError["reason"], string> = {
  invalid_url: "The URL is not an absolute http or https URL.",
  address_not_allowed: "Address not allowed: outbound requests reach public addresses only.",
  dns: "The host could not be resolved.",
  timeout: "Timed out: no complete answer in time.",
  too_large: "The answer is too large.",
  network: "The connection failed."
}

/** Socket errors of a connection that was never made. */
const NEVER_CONNECTED: ReadonlySet<string> = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH"])

/** A failure: the category's consumer message, and `detail` for the operator. */
const fail = (reason: OutboundError["reason"], detail: string, unsent = false) =>
  new OutboundError({ reason, message: consumerMessage[reason], detail, ...(unsent ? { unsent } : {}) })

const parseUrl = (raw: string) =>
  Either.try({ try: () => new URL(raw), catch: () => fail("invalid_url", "The URL is not an absolute URL.") }).pipe(
    Either.filterOrLeft(
      (url) => url.protocol === "http:" || url.protocol === "https:",
      (url) => fail("invalid_url", `The scheme ${url.protocol.replace(":", "")} is not allowed; use http or https.`)
    )
  )

/** Most idle keep-alive pools kept; the least recently used one is closed beyond it. */
const MAX_POOLS = 256
/** How long an idle kept-alive connection stays open (below the usual 5 s of servers). */
const IDLE_SOCKET_MS = 4_000

/**
 * Keep-alive connection pools, one per checked address, port, protocol and host name: a pooled
 * connection only ever goes to the address that was checked when it was opened, and carries the
 * TLS identity of its host name.
 */
export class AgentPool {
  private readonly agents = new Map<string, http.Agent>()

  /** The pool of connections to `target` for `url`. */
  agentFor(url: URL, target: ResolvedAddress): http.Agent {
    const key = `${url.protocol}//${url.hostname}:${url.port}@${target.address}`
    const found = this.agents.get(key)
    if (found !== undefined) {
      // Most recently used last.
      this.agents.delete(key)
      this.agents.set(key, found)
      return found
    }
    const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: "lifo" as const }
    const agent = url.protocol === "https:" ? new https.Agent(options) : new http.Agent(options)
    this.agents.set(key, agent)
    if (this.agents.size > MAX_POOLS) {
      const [oldestKey, oldest] = this.agents.entries().next().value!
      this.agents.delete(oldestKey)
      oldest.destroy()
    }
    return agent
  }

  /** Closes every pooled connection. */
  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy()
    this.agents.clear()
  }
}

/** A timer of the exchange itself: when it fires, the request is given up with this failure. */
interface Deadline {
  /** Epoch milliseconds (`Date.now`). */
  readonly until: number
  readonly failure: () => OutboundError
}

/**
 * Sends one request to an address already checked; `lookup` pins the connection to it, and the
 * pool reuses connections to that address. A request that fails with a reset on a reused
 * connection (the server closed it while idle) is sent once more on a fresh one. With a
 * `deadline`, a timer of its own bounds the exchange (the retry included).
 */
const send = (
  url: URL,
  target: ResolvedAddress,
  request: OutboundRequest,
  maxResponseBytes: number,
  pool: AgentPool,
  deadline?: Deadline,
  retried = false
): Effect.Effect<OutboundResponse, OutboundError> =>
  Effect.async<OutboundResponse, OutboundError>((resume) => {
    let timer: ReturnType<typeof setTimeout> | undefined
    let settled = false
    const finish = (result: Effect.Effect<OutboundResponse, OutboundError>) => {
      if (settled) return
      settled = true
      if (timer !== undefined) clearTimeout(timer)
      resume(result)
    }
    const lookup: LookupFunction = (_hostname, options, callback) => {
      if (options.all === true) callback(null, [{ address: target.address, family: target.family }])
      else callback(null, target.address, target.family)
    }
    const body = request.body === undefined
      ? undefined
      : typeof request.body === "string"
      ? Buffer.from(request.body)
      : request.body
    const headers = OutboundHttp.wireHeaders(request.headers)
    if (body !== undefined) headers["content-length"] = String(body.byteLength)
    const module = url.protocol === "https:" ? https : http
    const req = module.request(
      {
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[(.*)\]$/, "$1"),
        ...(url.port === "" ? {} : { port: Number(url.port) }),
        path: `${url.pathname}${url.search}`,
        method: request.method,
        headers,
        lookup,
        agent: pool.agentFor(url, target)
      },
      (res) => {
        const declared = Number(res.headers["content-length"] ?? "0")
        if (declared > maxResponseBytes) {
          req.destroy()
          return finish(Effect.fail(fail("too_large", `The answer is larger than ${maxResponseBytes} bytes.`)))
        }
        const chunks: Array<Buffer> = []
        let size = 0
        res.on("data", (chunk: Buffer) => {
          size += chunk.length
          if (size > maxResponseBytes) {
            req.destroy()
            finish(Effect.fail(fail("too_large", `The answer is larger than ${maxResponseBytes} bytes.`)))
          } else chunks.push(chunk)
        })
        res.on("error", (cause) =>
          finish(Effect.fail(fail("network", `The answer from ${url.host} broke off (${codeOf(cause)}).`))))
        res.on("end", () => {
          const responseHeaders: Record<string, string> = {}
          for (const name in res.headers) {
            const value = res.headers[name]
            if (value !== undefined) {
              responseHeaders[name] = Array.isArray(value) ? value.join(", ") : value
            }
          }
          finish(
            Effect.succeed({
              status: res.statusCode ?? 0,
              headers: responseHeaders,
              body: chunks.length === 0 ? new Uint8Array(0) : new Uint8Array(Buffer.concat(chunks))
            })
          )
        })
      }
    )
    if (deadline !== undefined) {
      timer = setTimeout(() => {
        req.destroy()
        finish(Effect.fail(deadline.failure()))
      }, Math.max(0, deadline.until - Date.now()))
    }
    req.on("error", (cause) => {
      if (!retried && req.reusedSocket && codeOf(cause) === "ECONNRESET") {
        // The retry carries its own timer, until the same time.
        if (timer !== undefined) {
          clearTimeout(timer)
        }
        settled = true
        resume(send(url, target, request, maxResponseBytes, pool, deadline, true))
      } else {
        const code = codeOf(cause)
        // No connection was made (a reused one was connected): nothing of the request was sent.
        const unsent = !req.reusedSocket && NEVER_CONNECTED.has(code)
        finish(Effect.fail(fail("network", `The request to ${url.host} failed (${code}).`, unsent)))
      }
    })
    req.end(body)
    return Effect.sync(() => {
      if (timer !== undefined) {
        clearTimeout(timer)
      }
      req.destroy()
    })
  })

/** What is known of a URL before any request: its parsed form, and its address when its host is an IP literal. */
interface Parsed {
  readonly url: URL
  readonly hostname: string
  /** The address of an IP-literal host (nothing to resolve). */
  readonly literal: ResolvedAddress | undefined
  /** Why the address policy refuses that literal, if it does. */
  readonly refused: AddressClass | undefined
}

/** URLs parsed so far (most recently used last); a URL's meaning never changes, only what its name resolves to. */
const MAX_PARSED = 1024

/**
 * The clock Effect runs with when none is provided. With it, the time limit of a request is a
 * timer of the request itself; with any other clock (a test's), it is the Effect timeout that
 * follows that clock.
 */
const liveClock = Effect.runSync(Effect.clockWith(Effect.succeed))

/** A guarded client with these options; its connections are pooled in `pool`. */
export const make = (options: Options, pool: AgentPool = new AgentPool()): OutboundHttp.OutboundHttp["Type"] => {
  const resolver = options.resolver ?? systemResolver
  const defaultTimeout = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const defaultMax = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
  const parsed = new Map<string, Parsed>()
  const allowHosts = options.allowHosts ?? []
  const naming = options.naming ?? defaultNaming
  /** Whether the address check is skipped for `url`: every private network allowed, or its host listed. */
  const unguarded = (url: URL) => options.allowPrivateNetworks || isAllowedHost(url, allowHosts)

  const parse = (raw: string): Either.Either<Parsed, OutboundError> => {
    const known = parsed.get(raw)
    if (known !== undefined) return Either.right(known)
    return Either.map(parseUrl(raw), (url) => {
      const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1")
      const family = isIP(hostname)
      const literal = family === 0 ? undefined : { address: hostname, family: family === 6 ? 6 : 4 } as const
      const entry = { url, hostname, literal, refused: literal === undefined ? undefined : classify(hostname) }
      if (parsed.size >= MAX_PARSED) parsed.delete(parsed.keys().next().value!)
      parsed.set(raw, entry)
      return entry
    })
  }

  /** A literal address in the URL's host (any spelling: the URL parser writes it in canonical form) that is not allowed. */
  const refusal = (raw: string): Option.Option<OutboundError> => {
    if (!URL.canParse(raw)) return Option.none()
    const url = new URL(raw)
    const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1")
    if (isIP(hostname) === 0 || unguarded(url)) return Option.none()
    const refused = classify(hostname)
    if (refused === undefined) return Option.none()
    const message = `its host ${hostname} is ${withArticle(refused)}, which ${naming.process} reaches ${
      onlyWhenAllowed(naming, url)
    }.`
    return Option.some(
      new OutboundError({ reason: "address_not_allowed", message, detail: `Refused before sending: ${message}` })
    )
  }

  /** The address to connect to: every address the host has is checked (a literal was checked once). */
  const target = ({ hostname, literal, refused, url }: Parsed): Effect.Effect<ResolvedAddress, OutboundError> => {
    const open = unguarded(url)
    if (literal !== undefined) {
      return refused === undefined || open
        ? Effect.succeed(literal)
        : Effect.fail(fail(
          "address_not_allowed",
          `Refused: ${hostname} is ${
            withArticle(refused)
          }; outbound requests reach public addresses only (${naming.process} reaches it ${
            onlyWhenAllowed(naming, url)
          }).`
        ))
    }
    return Effect.flatMap(resolver(hostname), (addresses) => {
      const first = addresses[0]
      if (first === undefined) return Effect.fail(fail("dns", `${hostname} has no address.`))
      if (!open) {
        for (const { address } of addresses) {
          const refused = classify(address)
          if (refused !== undefined) {
            const via = address === hostname ? "" : ` (${hostname} resolves to ${address})`
            return Effect.fail(fail(
              "address_not_allowed",
              `Refused: ${address} is ${
                withArticle(refused)
              }${via}; outbound requests reach public addresses only (${naming.process} reaches it ${
                onlyWhenAllowed(naming, url)
              }).`
            ))
          }
        }
      }
      return Effect.succeed(first)
    })
  }

  return {
    refusal,
    connectTarget: (raw) =>
      Either.match(parse(raw.replace(/^ws(s?):/i, "http$1:")), { onLeft: Effect.fail, onRight: target }),
    request: (request) => {
      const timeoutMs = request.timeoutMs ?? defaultTimeout
      const onTimeout = () => fail("timeout", `No complete answer within ${timeoutMs} ms.`)
      const maxResponseBytes = request.maxResponseBytes ?? defaultMax
      return Effect.clockWith((clock) => {
        const parsedUrl = parse(request.url)
        if (Either.isLeft(parsedUrl)) return Effect.fail(parsedUrl.left)
        const url = parsedUrl.right
        // An IP literal on the live clock: nothing to resolve, and the request's own timer bounds it
        // (an Effect timeout forks a fiber per request).
        if (clock === liveClock && url.literal !== undefined) {
          const deadline = { until: Date.now() + timeoutMs, failure: onTimeout }
          return Effect.flatMap(
            target(url),
            (address) => send(url.url, address, request, maxResponseBytes, pool, deadline)
          )
        }
        return Effect.flatMap(target(url), (address) => send(url.url, address, request, maxResponseBytes, pool)).pipe(
          Effect.timeoutFail({ duration: timeoutMs, onTimeout })
        )
      }).pipe(
        // The one place the details reach the operator: callers pass only `message` on to consumers.
        Effect.tapError((error) =>
          Effect.logWarning(`outbound ${request.method} failed (${error.reason}): ${error.detail}`)
        )
      )
    }
  }
}

/**
 * The guarded client as the instance's `OutboundHttp`:
 *
 * ```ts
 * AppexecLayer.make().pipe(Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: false })))
 * ```
 */
export const layer = (options: Options): Layer.Layer<OutboundHttp.OutboundHttp> =>
  Layer.scoped(
    OutboundHttp.OutboundHttp,
    Effect.map(
      Effect.acquireRelease(Effect.sync(() => new AgentPool()), (pool) => Effect.sync(() => pool.destroy())),
      (pool) => make(options, pool)
    )
  )
