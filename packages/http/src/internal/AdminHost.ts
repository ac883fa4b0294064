/**
 * Which `Host` the operator views answer. They take no key, so a page of another site could read
 * them through the operator's browser by DNS rebinding (its own name made to point at the admin
 * port): the browser then sends that name as `Host`. Only the admin port's own address,
 * `localhost`, `127.0.0.1` and `[::1]` (with the admin port), and the names the operator allowed
 * are answered. An address given as digits cannot be rebound, so on a wildcard address (`0.0.0.0`,
 * `::`) every IP address with the admin port is the port's own.
 */

/** The address and port the admin listener is bound to. */
export interface Bound {
  readonly address: string
  readonly port: number
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"])
const WILDCARD = new Set(["", "0.0.0.0", "::", "[::]"])
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/
const IPV6 = /^\[[0-9a-f:.]+\]$/

/** A `Host` value split into its name (an IPv6 address kept in brackets) and port (80 when absent); none when malformed. */
const parse = (host: string): { readonly name: string; readonly port: number } | undefined => {
  const lower = host.trim().toLowerCase()
  const close = lower.startsWith("[") ? lower.indexOf("]") + 1 : 0
  if (lower.startsWith("[") && close === 0) return undefined
  const colon = lower.indexOf(":", close)
  const name = colon === -1 ? lower : lower.slice(0, colon)
  const portText = colon === -1 ? "80" : lower.slice(colon + 1)
  if (name === "" || !/^\d{1,5}$/.test(portText)) return undefined
  return { name, port: Number(portText) }
}

/** `address` as it appears in a `Host` (an IPv6 address in brackets), lower-case. */
const asHostName = (address: string) => {
  const lower = address.toLowerCase()
  return lower.includes(":") && !lower.startsWith("[") ? `[${lower}]` : lower
}

/**
 * Whether the operator views answer a request sent with `host`: with the admin port (any port
 * while `bound` is not known), a loopback name or the bound address (any IP address when that is a
 * wildcard); or one of `allowed` (a name, with any port, or `name:port`), compared without case.
 */
export const allows = (
  host: string | undefined,
  bound: Bound | undefined,
  allowed: ReadonlySet<string>
): boolean => {
  if (host === undefined) return false
  const parsed = parse(host)
  if (parsed === undefined) return false
  if (allowed.has(parsed.name) || allowed.has(`${parsed.name}:${parsed.port}`)) return true
  if (bound !== undefined && parsed.port !== bound.port) return false
  if (LOOPBACK.has(parsed.name)) return true
  if (bound === undefined) return false
  const address = asHostName(bound.address)
  if (WILDCARD.has(address)) return IPV4.test(parsed.name) || IPV6.test(parsed.name)
  return parsed.name === address
}

/** `names` as `allows` compares them: trimmed and lower-case (an IPv6 address written in brackets). */
export const allowedSet = (names: ReadonlyArray<string>): ReadonlySet<string> =>
  new Set(names.map((name) => name.trim().toLowerCase()).filter((name) => name !== ""))
