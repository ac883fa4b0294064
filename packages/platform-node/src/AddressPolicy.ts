/**
 * Which IP addresses outbound requests may reach (docs/security.md). Public unicast addresses are
 * allowed; loopback, private, shared (CGNAT), link-local, unique-local, multicast, cloud-metadata
 * and reserved ranges are not. IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible,
 * SIIT, NAT64, 6to4) are judged by the IPv4 address they carry. An allow-list of hosts
 * (`AllowedHost`: `name`, `name:port`, an address, `[v6]:port`) lets an operator open exactly the
 * private receivers a deployment needs instead of every private network.
 */
import { Either } from "effect"
import ipaddr from "ipaddr.js"

/** The kind of a refused address. */
export type AddressClass =
  | "invalid"
  | "unspecified"
  | "loopback"
  | "private"
  | "shared"
  | "link-local"
  | "cloud-metadata"
  | "unique-local"
  | "multicast"
  | "reserved"

type Range = readonly [AddressClass, string, number]

const ipv4Ranges: ReadonlyArray<Range> = [
  ["cloud-metadata", "169.254.169.254", 32],
  ["cloud-metadata", "100.100.100.200", 32],
  ["unspecified", "0.0.0.0", 8],
  ["loopback", "127.0.0.0", 8],
  ["private", "10.0.0.0", 8],
  ["private", "172.16.0.0", 12],
  ["private", "192.168.0.0", 16],
  ["shared", "100.64.0.0", 10],
  ["link-local", "169.254.0.0", 16],
  ["multicast", "224.0.0.0", 4],
  ["reserved", "192.0.0.0", 24],
  ["reserved", "192.0.2.0", 24],
  ["reserved", "192.88.99.0", 24],
  ["reserved", "198.18.0.0", 15],
  ["reserved", "198.51.100.0", 24],
  ["reserved", "203.0.113.0", 24],
  ["reserved", "240.0.0.0", 4]
]

const ipv6Ranges: ReadonlyArray<Range> = [
  ["cloud-metadata", "fd00:ec2::254", 128],
  ["unspecified", "::", 128],
  ["loopback", "::1", 128],
  ["link-local", "fe80::", 10],
  ["unique-local", "fc00::", 7],
  ["multicast", "ff00::", 8],
  ["reserved", "::", 96],
  ["reserved", "fec0::", 10],
  ["reserved", "100::", 64],
  ["reserved", "2001::", 32],
  ["reserved", "2001:db8::", 32],
  ["reserved", "64:ff9b:1::", 48],
  ["reserved", "3fff::", 20]
]

const classes: ReadonlyArray<AddressClass> = [
  "cloud-metadata",
  "unspecified",
  "loopback",
  "private",
  "shared",
  "link-local",
  "unique-local",
  "multicast",
  "reserved"
]

/** The ranges of each class, parsed once, in the order they are checked (the most specific first). */
const parsedRanges = classes.flatMap((kind) =>
  [...ipv4Ranges, ...ipv6Ranges]
    .filter(([k]) => k === kind)
    .map(([, address, prefix]) => [kind, ipaddr.parse(address), prefix] as const)
)

/** The parsed address, or `undefined` when `address` is not an IP literal (a zone index is allowed on IPv6). */
const parse = (address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined => {
  if (ipaddr.IPv4.isValidFourPartDecimal(address)) return ipaddr.IPv4.parse(address)
  return ipaddr.IPv6.isValid(address) ? ipaddr.IPv6.parse(address) : undefined
}

const isZero = (bytes: Uint8Array, from: number, to: number) => bytes.subarray(from, to).every((b) => b === 0)
const dotted = (bytes: Uint8Array, at: number) => Array.from(bytes.subarray(at, at + 4)).join(".")

/** The IPv4 address an IPv6 address carries, if it is of a form that carries one. */
export const embeddedIpv4 = (address: string): string | undefined => {
  const parsed = parse(address)
  if (parsed === undefined || parsed.kind() !== "ipv6") return undefined
  const b = Uint8Array.from(parsed.toByteArray())
  // ::ffff:a.b.c.d (IPv4-mapped)
  if (isZero(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return dotted(b, 12)
  // ::ffff:0:a.b.c.d (SIIT IPv4-translated)
  if (isZero(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && isZero(b, 10, 12)) return dotted(b, 12)
  // ::a.b.c.d (IPv4-compatible, deprecated), but not :: or ::1
  if (isZero(b, 0, 12) && !(isZero(b, 12, 15) && b[15]! <= 1)) return dotted(b, 12)
  // 64:ff9b::a.b.c.d (NAT64 well-known prefix)
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && isZero(b, 4, 12)) return dotted(b, 12)
  // 2002:AABB:CCDD::/48 (6to4)
  if (b[0] === 0x20 && b[1] === 0x02) return dotted(b, 2)
  return undefined
}

/** Why `address` (an IP literal) may not be reached, or `undefined` when it is public. */
export const classify = (address: string): AddressClass | undefined => {
  const parsed = parse(address)
  if (parsed === undefined) return "invalid"
  if (parsed.kind() === "ipv6") {
    const v4 = embeddedIpv4(address)
    if (v4 !== undefined) return classify(v4)
  }
  for (const [kind, range, prefix] of parsedRanges) {
    if (range.kind() === parsed.kind() && parsed.match(range, prefix)) return kind
  }
  return undefined
}

/** Whether `address` is a public unicast address. */
export const isPublic = (address: string): boolean => classify(address) === undefined

/** An address of `kind` as a sentence says it, with its article: "a loopback address", "an unspecified address". */
export const withArticle = (kind: AddressClass): string =>
  `${kind === "invalid" || kind === "unspecified" ? "an" : "a"} ${kind} address`

/** A host outbound requests may reach whatever its addresses: its name (lower case) or address, and a port or any. */
export interface AllowedHost {
  /** As the URL parser writes a host: a name in lower case, an IPv4 address, an IPv6 address in brackets. */
  readonly host: string
  /** The port, or `undefined` for any. */
  readonly port: number | undefined
}

/**
 * An allow-list entry read: `name`, `name:port`, `10.0.0.5`, `10.0.0.5:8443`, `[fd00::1]` or
 * `[fd00::1]:8443`; the reason when it is none of these.
 */
export const parseAllowedHost = (entry: string): Either.Either<AllowedHost, string> => {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^\s:/@[\]]+)(?::(\d{1,5}))?$/.exec(entry.trim())
  const port = m?.[2] === undefined ? undefined : Number(m[2])
  if (m === null || (port !== undefined && (port < 1 || port > 65535)) || !URL.canParse(`http://${m[1]}`)) {
    return Either.left(`'${entry}' is not a host: write name, name:port, an IP address, or [IPv6]:port`)
  }
  return Either.right({ host: new URL(`http://${m[1]}`).hostname, port })
}

/** Whether `url` (parsed) names one of `allowed`: its host, and its port (the scheme's default when absent). */
export const isAllowedHost = (url: URL, allowed: ReadonlyArray<AllowedHost>): boolean => {
  if (allowed.length === 0) return false
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port)
  return allowed.some((entry) => entry.host === url.hostname && (entry.port === undefined || entry.port === port))
}

/** `host:port` of a URL as an allow-list entry names it (the scheme's default port written out). */
export const hostPortOf = (url: URL): string =>
  `${url.hostname}:${url.port === "" ? (url.protocol === "https:" ? 443 : 80) : url.port}`
