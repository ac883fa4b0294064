/**
 * `NodeOutboundHttp`'s `refusal`: a URL whose host is a literal address that is not allowed is
 * refused without the network, in every spelling the URL parser accepts; names are left to the
 * check at sending time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import { NodeOutboundHttp } from "../src/index.js"

const strict = NodeOutboundHttp.make({ allowPrivateNetworks: false })
const open = NodeOutboundHttp.make({ allowPrivateNetworks: true })

const refused: ReadonlyArray<readonly [string, string]> = [
  ["http://127.0.0.1/hook", "loopback"],
  ["http://127.1/hook", "loopback"],
  ["http://2130706433/hook", "loopback"],
  ["http://0x7f000001/hook", "loopback"],
  ["http://0x7f.0.0.1/hook", "loopback"],
  ["http://0177.0.0.1/hook", "loopback"],
  ["http://017700000001/hook", "loopback"],
  ["http://127.0.0.1./hook", "loopback"],
  ["https://[::1]/hook", "loopback"],
  ["http://[0:0:0:0:0:0:0:1]:8080/hook", "loopback"],
  ["http://[::ffff:127.0.0.1]/hook", "loopback"],
  ["http://[::ffff:7f00:1]/hook", "loopback"],
  ["http://[::ffff:0:127.0.0.1]/hook", "loopback"],
  ["http://[64:ff9b::127.0.0.1]/hook", "loopback"],
  ["http://[2002:7f00:1::]/hook", "loopback"],
  ["http://10.0.0.1/hook", "private"],
  ["http://167772161/hook", "private"],
  ["http://0xa.0x0.0x0.0x1/hook", "private"],
  ["http://012.1/hook", "private"],
  ["http://172.16.0.1/hook", "private"],
  ["http://192.168.0.10/hook", "private"],
  ["http://3232235530/hook", "private"],
  ["http://[::ffff:192.168.0.10]/hook", "private"],
  ["http://[::ffff:c0a8:a]/hook", "private"],
  ["http://100.64.0.1/hook", "shared"],
  ["http://169.254.169.254/latest/meta-data", "cloud-metadata"],
  ["http://2852039166/latest/meta-data", "cloud-metadata"],
  ["http://0xa9fea9fe/latest", "cloud-metadata"],
  ["http://0251.0376.0251.0376/latest", "cloud-metadata"],
  ["http://169.254.43518/latest", "cloud-metadata"],
  ["http://[::ffff:169.254.169.254]/latest", "cloud-metadata"],
  ["http://[::ffff:a9fe:a9fe]/latest", "cloud-metadata"],
  ["http://[fd00:ec2::254]/latest", "cloud-metadata"],
  ["http://100.100.100.200/latest", "cloud-metadata"],
  ["http://169.254.1.1/hook", "link-local"],
  ["http://[fe80::1]/hook", "link-local"],
  ["http://[fc00::1]/hook", "unique-local"],
  ["http://[fd12:3456::1]/hook", "unique-local"],
  ["http://0.0.0.0/hook", "unspecified"],
  ["http://0/hook", "unspecified"],
  ["http://[::]/hook", "unspecified"],
  ["http://224.0.0.1/hook", "multicast"],
  ["http://[ff02::1]/hook", "multicast"]
]

describe("NodeOutboundHttp.refusal", () => {
  it.each(refused)("refuses %s (%s) when private networks are not allowed", (url, kind) => {
    const refusal = strict.refusal?.(url) ?? Option.none()
    expect(Option.isSome(refusal)).toBe(true)
    if (Option.isNone(refusal)) return
    expect(refusal.value.reason).toBe("address_not_allowed")
    // With its article: "an unspecified address", "a loopback address".
    expect(refusal.value.message).toContain(`is ${kind === "unspecified" ? "an" : "a"} ${kind} address`)
    expect(refusal.value.message).toContain("--allow-private-networks")
  })

  it("says an unspecified address with its article", () => {
    const refusal = strict.refusal?.("http://0.0.0.0/hook") ?? Option.none()
    expect(Option.map(refusal, (r) => r.message)).toEqual(
      Option.some(expect.stringMatching(/^its host 0\.0\.0\.0 is an unspecified address, which /))
    )
  })

  it.each(refused)("lets %s through when private networks are allowed", (url) => {
    expect(Option.isNone(open.refusal?.(url) ?? Option.none())).toBe(true)
  })

  it.each([
    "https://example.com/hook",
    "http://localhost:8080/hook",
    "http://internal.example/hook",
    "http://93.184.216.34/hook",
    "http://[2606:4700::1111]/hook",
    "http://1.1.1.1/hook"
  ])("leaves %s to the check at sending time", (url) => {
    expect(Option.isNone(strict.refusal?.(url) ?? Option.none())).toBe(true)
  })
})
