/**
 * The allow-list beside `allowPrivateNetworks` (docs/security.md): a host listed (`name`,
 * `name:port`, an address, `[IPv6]:port`) is reached whatever its addresses, a host or port not
 * listed is refused as before; every refusal names the process that refused and the two settings
 * that would allow the host, at start (`refusal`) and when sending (the operator's detail).
 */
import { TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import { AddressPolicy, NodeOutboundHttp } from "../src/index.js"

const naming: NodeOutboundHttp.Naming = {
  process: "appexec worker",
  allowHosts: "--allow-hosts",
  allowPrivateNetworks: "--allow-private-networks"
}

/** A client that allows exactly `entries`. */
const allowing = (entries: ReadonlyArray<string>, resolver?: NodeOutboundHttp.Resolver) =>
  NodeOutboundHttp.make({
    allowPrivateNetworks: false,
    allowHosts: entries.map((entry) => Either.getOrThrow(AddressPolicy.parseAllowedHost(entry))),
    naming,
    ...(resolver === undefined ? {} : { resolver })
  })

describe("the allow-list of hosts", () => {
  it("reads name, name:port, addresses and [IPv6]:port; refuses anything else, saying what it takes", () => {
    const read = (entry: string) => Either.getOrUndefined(AddressPolicy.parseAllowedHost(entry))
    expect(read("hooks.internal")).toEqual({ host: "hooks.internal", port: undefined })
    expect(read(" Hooks.Internal:8443 ")).toEqual({ host: "hooks.internal", port: 8443 })
    expect(read("10.0.0.5")).toEqual({ host: "10.0.0.5", port: undefined })
    expect(read("10.0.0.5:80")).toEqual({ host: "10.0.0.5", port: 80 })
    expect(read("[fd00::1]:8080")).toEqual({ host: "[fd00::1]", port: 8080 })
    for (const bad of ["", "a b", "host:99999", "host:0", "http://host", "host:", "[zz]", "user@host"]) {
      expect(AddressPolicy.parseAllowedHost(bad), bad).toEqual(
        Either.left(`'${bad}' is not a host: write name, name:port, an IP address, or [IPv6]:port`)
      )
    }
  })

  it("judges a URL by its host and its port (the scheme's default when it names none)", () => {
    const entries = ["hooks.internal:443", "10.0.0.5"].map((e) => Either.getOrThrow(AddressPolicy.parseAllowedHost(e)))
    const allowed = (url: string) => AddressPolicy.isAllowedHost(new URL(url), entries)
    expect(allowed("https://hooks.internal/x")).toBe(true)
    expect(allowed("https://HOOKS.internal:443/x")).toBe(true)
    expect(allowed("http://hooks.internal/x")).toBe(false)
    expect(allowed("https://hooks.internal:8443/x")).toBe(false)
    expect(allowed("http://10.0.0.5:9000/x")).toBe(true)
    expect(allowed("http://10.0.0.6/x")).toBe(false)
  })

  it("at start: a listed literal passes, another port of it is refused, naming the process and both settings", () => {
    const client = allowing(["127.0.0.1:9000"])
    expect(Option.isNone(client.refusal!("http://127.0.0.1:9000/hook"))).toBe(true)
    const refused = client.refusal!("http://127.0.0.1:9001/hook")
    expect(Option.map(refused, (e) => e.message)).toEqual(
      Option.some(
        "its host 127.0.0.1 is a loopback address, which appexec worker reaches only when allowed: " +
          "--allow-hosts 127.0.0.1:9001, or --allow-private-networks."
      )
    )
  })

  it.scoped("when sending: a listed host is reached at its private address; one not listed is refused before any byte", () =>
    Effect.gen(function*() {
      const listed = yield* TestReceiver.start(() => 204)
      const other = yield* TestReceiver.start(() => 204)
      const client = allowing([`127.0.0.1:${listed.port}`])
      const answer = yield* client.request({ method: "POST", url: listed.url("/hook"), body: "{}" })
      expect(answer.status).toBe(204)
      const error = yield* Effect.flip(client.request({ method: "POST", url: other.url("/hook"), body: "{}" }))
      expect(error.reason).toBe("address_not_allowed")
      expect(error.message).toBe("Address not allowed: outbound requests reach public addresses only.")
      expect(error.detail).toContain(
        `appexec worker reaches it only when allowed: --allow-hosts 127.0.0.1:${other.port}`
      )
      expect(other.received).toHaveLength(0)
    }))

  it.scoped("a listed name is reached whatever it resolves to, on any port when the entry names none", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start(() => 200)
      const resolver: NodeOutboundHttp.Resolver = () => Effect.succeed([{ address: "127.0.0.1", family: 4 }])
      const answer = yield* allowing(["hooks.internal"], resolver).request({
        method: "GET",
        url: `http://hooks.internal:${receiver.port}/hook`
      })
      expect(answer.status).toBe(200)
      const refused = yield* Effect.flip(
        allowing(["other.internal"], resolver).request({
          method: "GET",
          url: `http://hooks.internal:${receiver.port}/`
        })
      )
      expect(refused.detail).toContain("(hooks.internal resolves to 127.0.0.1)")
      expect(receiver.received).toHaveLength(1)
    }))
})
