/**
 * Which IP addresses outbound requests may reach (DESIGN §3). Public unicast addresses are
 * allowed; loopback, private, shared (CGNAT), link-local, unique-local, multicast, cloud-metadata
 * and reserved ranges are not. IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible,
 * SIIT, NAT64, 6to4) are judged by the IPv4 address they carry.
 */
import { BlockList, isIP } from "node:net"

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

/** One block list per class, in the order they are checked (the most specific first). */
const blockLists: ReadonlyArray<readonly [AddressClass, BlockList]> = classes.map((kind) => {
  const list = new BlockList()
  for (const [k, address, prefix] of ipv4Ranges) if (k === kind) list.addSubnet(address, prefix, "ipv4")
  for (const [k, address, prefix] of ipv6Ranges) if (k === kind) list.addSubnet(address, prefix, "ipv6")
  return [kind, list] as const
})

/** The 16 bytes of a valid IPv6 address (dotted IPv4 tail and zone index allowed). */
const ipv6Bytes = (address: string): Uint8Array | undefined => {
  const text = address.split("%")[0]!
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  let hex = text
  const bytes = new Uint8Array(16)
  if (tail !== null) {
    const v4 = tail[1]!.split(".").map(Number)
    bytes.set(v4, 12)
    hex = `${text.slice(0, -tail[1]!.length)}0:0`
  }
  const [head, rest] = hex.split("::") as [string, string | undefined]
  const groups = (part: string) => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)))
  const left = groups(head)
  const right = rest === undefined ? [] : groups(rest)
  const all = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right]
  if (all.length !== 8 || all.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return undefined
  all.forEach((g, i) => {
    if (tail !== null && i >= 6) return
    bytes[i * 2] = g >> 8
    bytes[i * 2 + 1] = g & 0xff
  })
  return bytes
}

const isZero = (bytes: Uint8Array, from: number, to: number) => bytes.subarray(from, to).every((b) => b === 0)
const dotted = (bytes: Uint8Array, at: number) => Array.from(bytes.subarray(at, at + 4)).join(".")

/** The IPv4 address an IPv6 address carries, if it is of a form that carries one. */
export const embeddedIpv4 = (address: string): string | undefined => {
  if (isIP(address) !== 6) return undefined
  const b = ipv6Bytes(address)
  if (b === undefined) return undefined
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
  const family = isIP(address)
  if (family === 0) return "invalid"
  if (family === 6) {
    const v4 = embeddedIpv4(address)
    if (v4 !== undefined) return classify(v4)
  }
  const type = family === 4 ? "ipv4" : "ipv6"
  const plain = family === 6 ? address.split("%")[0]! : address
  for (const [kind, list] of blockLists) if (list.check(plain, type)) return kind
  return undefined
}

/** Whether `address` is a public unicast address. */
export const isPublic = (address: string): boolean => classify(address) === undefined
