import { OutboundHttp } from "@appexec/core"
import { TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, TestClock } from "effect"
import * as net from "node:net"
import { AddressPolicy, NodeOutboundHttp } from "../src/index.js"

/** A resolver that answers every name with `addresses` and counts its calls. */
const resolverOf = (...addresses: ReadonlyArray<string>) => {
  const calls: Array<string> = []
  const resolver: NodeOutboundHttp.Resolver = (hostname) => {
    calls.push(hostname)
    return Effect.succeed(addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }) as const))
  }
  return { resolver, calls }
}

const refusedReason = (client: OutboundHttp.OutboundHttp["Type"], url: string) =>
  client.request({ method: "GET", url }).pipe(
    Effect.flip,
    Effect.map((e) => e.reason)
  )

const refused: ReadonlyArray<readonly [string, AddressPolicy.AddressClass]> = [
  // IPv4
  ["127.0.0.1", "loopback"],
  ["127.255.0.9", "loopback"],
  ["10.1.2.3", "private"],
  ["172.16.0.1", "private"],
  ["172.31.255.254", "private"],
  ["192.168.1.1", "private"],
  ["100.64.0.1", "shared"],
  ["169.254.10.20", "link-local"],
  ["169.254.169.254", "cloud-metadata"],
  ["100.100.100.200", "cloud-metadata"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["0.0.0.0", "unspecified"],
  ["255.255.255.255", "reserved"],
  ["192.0.2.1", "reserved"],
  // IPv6
  ["::1", "loopback"],
  ["::", "unspecified"],
  ["fe80::1", "link-local"],
  ["fc00::1", "unique-local"],
  ["fd12:3456::1", "unique-local"],
  ["fd00:ec2::254", "cloud-metadata"],
  ["ff02::1", "multicast"],
  ["2001:db8::1", "reserved"],
  // IPv6 forms carrying an IPv4 address
  ["::ffff:127.0.0.1", "loopback"],
  ["::ffff:7f00:1", "loopback"],
  ["::ffff:10.0.0.1", "private"],
  ["::ffff:192.168.0.1", "private"],
  ["::ffff:169.254.169.254", "cloud-metadata"],
  ["::ffff:a9fe:a9fe", "cloud-metadata"],
  ["::ffff:0:10.0.0.1", "private"],
  ["::127.0.0.1", "loopback"],
  ["64:ff9b::10.0.0.1", "private"],
  ["2002:7f00:1::", "loopback"]
]

describe("address policy", () => {
  it("classifies each refused range", () => {
    for (const [address, kind] of refused) expect([address, AddressPolicy.classify(address)]).toEqual([address, kind])
  })

  it("lets public addresses through, also in IPv4-mapped form", () => {
    for (
      const address of [
        "93.184.215.14",
        "8.8.8.8",
        "1.1.1.1",
        "2606:4700:4700::1111",
        "::ffff:8.8.8.8",
        "172.32.0.1",
        "100.128.0.1"
      ]
    ) {
      expect([address, AddressPolicy.classify(address)]).toEqual([address, undefined])
    }
  })

  it("refuses what is not an IP address", () => {
    expect(AddressPolicy.classify("example.com")).toBe("invalid")
  })
})

describe("guarded outbound HTTP", () => {
  it.effect("refuses each non-public range after resolution through the injected resolver", () =>
    Effect.gen(function*() {
      for (const [address, kind] of refused) {
        const { resolver, calls } = resolverOf(address)
        const client = NodeOutboundHttp.make({ allowPrivateNetworks: false, resolver })
        const error = yield* Effect.flip(
          client.request({ method: "POST", url: "https://hooks.example.com/x", body: "{}" })
        )
        expect(calls).toEqual(["hooks.example.com"])
        expect([address, error.reason]).toEqual([address, "address_not_allowed"])
        expect(error.detail).toContain(`is ${kind === "unspecified" ? "an" : "a"} ${kind} address`)
        expect(error.message).toBe("Address not allowed: outbound requests reach public addresses only.")
      }
    }))

  it.effect("a refusal tells the consumer the category only; the addresses are in the operator's detail", () =>
    Effect.gen(function*() {
      const client = NodeOutboundHttp.make({ allowPrivateNetworks: false, resolver: resolverOf("10.0.0.7").resolver })
      const error = yield* Effect.flip(client.request({ method: "GET", url: "https://hooks.internal.example/x" }))
      expect(error.message).toBe("Address not allowed: outbound requests reach public addresses only.")
      expect(error.message).not.toMatch(/10\.0\.0\.7|internal|private/)
      expect(error.detail).toBe(
        "Refused: 10.0.0.7 is a private address (hooks.internal.example resolves to 10.0.0.7); outbound requests " +
          "reach public addresses only (appexec reaches it only when allowed: --allow-hosts " +
          "hooks.internal.example:443, or --allow-private-networks)."
      )
    }))

  it.scopedLive("a refused connection is 'the connection failed' to the consumer, with host and code in the detail", () =>
    Effect.gen(function*() {
      const closed = yield* Effect.promise(
        () =>
          new Promise<number>((resolve) => {
            const server = net.createServer().listen(0, "127.0.0.1", () => {
              const { port } = server.address() as net.AddressInfo
              server.close(() => resolve(port))
            })
          })
      )
      const client = NodeOutboundHttp.make({ allowPrivateNetworks: true, resolver: resolverOf("127.0.0.1").resolver })
      const error = yield* Effect.flip(client.request({ method: "GET", url: `http://db.internal.example:${closed}/` }))
      expect(error.reason).toBe("network")
      expect(error.message).toBe("The connection failed.")
      expect(error.detail).toBe(`The request to db.internal.example:${closed} failed (ECONNREFUSED).`)
      // No connection, so nothing was sent: a request that must not be repeated may be sent again.
      expect(error.unsent).toBe(true)
    }))

  it.effect("refuses a host whose answers mix a public and a private address", () =>
    Effect.gen(function*() {
      const client = NodeOutboundHttp.make({
        allowPrivateNetworks: false,
        resolver: resolverOf("93.184.215.14", "10.0.0.1").resolver
      })
      expect(yield* refusedReason(client, "https://mixed.example/")).toBe("address_not_allowed")
    }))

  it.effect("refuses IP literals in the URL without resolving them, in every notation", () =>
    Effect.gen(function*() {
      const { resolver, calls } = resolverOf("93.184.215.14")
      const client = NodeOutboundHttp.make({ allowPrivateNetworks: false, resolver })
      for (
        const url of [
          "http://127.0.0.1/",
          "http://2130706433/",
          "http://0x7f.1/",
          "http://[::1]:8080/",
          "http://[::ffff:127.0.0.1]/",
          "http://[::ffff:a9fe:a9fe]/latest/meta-data",
          "http://169.254.169.254/latest/meta-data"
        ]
      ) {
        expect([url, yield* refusedReason(client, url)]).toEqual([url, "address_not_allowed"])
        // The second time, from what the client remembers of the URL: refused all the same.
        expect([url, yield* refusedReason(client, url)]).toEqual([url, "address_not_allowed"])
      }
      expect(calls).toEqual([])
    }))

  it.effect("a host name is resolved and checked on every request, however often its URL was seen", () =>
    Effect.gen(function*() {
      const answers = ["93.184.215.14", "10.0.0.1"]
      const calls: Array<string> = []
      const client = NodeOutboundHttp.make({
        allowPrivateNetworks: false,
        resolver: (hostname) => {
          calls.push(hostname)
          const address = answers[Math.min(calls.length - 1, answers.length - 1)]!
          return address === "10.0.0.1"
            ? Effect.succeed([{ address, family: 4 }])
            : Effect.fail(new OutboundHttp.OutboundError({ reason: "dns", message: "no", detail: "no" }))
        }
      })
      expect(yield* refusedReason(client, "http://hooks.example/")).toBe("dns")
      expect(yield* refusedReason(client, "http://hooks.example/")).toBe("address_not_allowed")
      expect(calls).toEqual(["hooks.example", "hooks.example"])
    }))

  it.effect("only http and https are allowed", () =>
    Effect.gen(function*() {
      const client = NodeOutboundHttp.make({ allowPrivateNetworks: true, resolver: resolverOf("127.0.0.1").resolver })
      for (const url of ["ftp://example.com/x", "file:///etc/passwd", "gopher://example.com/", "not a url"]) {
        expect([url, yield* refusedReason(client, url)]).toEqual([url, "invalid_url"])
      }
    }))

  it.effect("a resolver failure is a dns error", () =>
    Effect.gen(function*() {
      const client = NodeOutboundHttp.make({
        allowPrivateNetworks: false,
        resolver: () =>
          Effect.fail(
            new OutboundHttp.OutboundError({
              reason: "dns",
              message: "The host could not be resolved.",
              detail: "no such host"
            })
          )
      })
      expect(yield* refusedReason(client, "https://nowhere.example/")).toBe("dns")
    }))

  it.scopedLive("connects to the address it checked, keeping the host name in Host", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start(() => (res) => res.writeHead(201, { "x-seen": "yes" }).end("created"))
      const { resolver, calls } = resolverOf("127.0.0.1")
      const client = NodeOutboundHttp.make({ allowPrivateNetworks: true, resolver })
      const response = yield* client.request({
        method: "POST",
        url: `http://receiver.example:${receiver.port}/path?q=1`,
        headers: { "content-type": "text/plain" },
        body: "hello"
      })
      expect(calls).toEqual(["receiver.example"])
      expect(response.status).toBe(201)
      expect(response.headers["x-seen"]).toBe("yes")
      expect(new TextDecoder().decode(response.body)).toBe("created")
      const request = yield* receiver.next
      expect(request.headers.host).toBe(`receiver.example:${receiver.port}`)
      expect(request.url).toBe("/path?q=1")
      expect(new TextDecoder().decode(request.rawBody)).toBe("hello")
    }))

  it.scopedLive("returns a redirect as it is and does not follow it", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start((req) => (res) =>
        req.url === "/old" ? res.writeHead(301, { location: "/new" }).end() : res.writeHead(200).end("followed")
      )
      const client = NodeOutboundHttp.make({ allowPrivateNetworks: true })
      const response = yield* client.request({ method: "POST", url: receiver.url("/old"), body: "{}" })
      expect(response.status).toBe(301)
      expect(response.headers["location"]).toBe("/new")
      expect((yield* receiver.next).url).toBe("/old")
      expect(receiver.received).toHaveLength(1)
    }))

  it.scopedLive("bounds the answer's size", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start(() => (res) => {
        res.writeHead(200)
        res.write(Buffer.alloc(4096, 1))
        res.end(Buffer.alloc(4096, 2))
      })
      const client = NodeOutboundHttp.make({ allowPrivateNetworks: true })
      const error = yield* Effect.flip(client.request({ method: "GET", url: receiver.url(), maxResponseBytes: 5000 }))
      expect(error.reason).toBe("too_large")
      const fits = yield* client.request({ method: "GET", url: receiver.url(), maxResponseBytes: 8192 })
      expect(fits.body.byteLength).toBe(8192)
    }))

  it.scoped("bounds the exchange in time (virtual clock; the receiver never answers)", () =>
    Effect.gen(function*() {
      const arrived = yield* Deferred.make<void>()
      const receiver = yield* TestReceiver.start(() => {
        Deferred.unsafeDone(arrived, Effect.void)
        return "hold"
      })
      const client = NodeOutboundHttp.make({ allowPrivateNetworks: true })
      const pending = yield* Effect.fork(
        Effect.either(client.request({ method: "POST", url: receiver.url(), body: "{}", timeoutMs: 10_000 }))
      )
      yield* Deferred.await(arrived)
      yield* TestClock.adjust("9 seconds")
      expect(pending.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(pending)
      expect(Either.isLeft(result) && result.left.reason).toBe("timeout")
    }))

  it.scopedLive("on the live clock, a request to an IP literal is bounded by a timer of its own", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start(() => "hold")
      const client = NodeOutboundHttp.make({ allowPrivateNetworks: true })
      const started = Date.now()
      const result = yield* Effect.either(
        client.request({ method: "POST", url: receiver.url(), body: "{}", timeoutMs: 150 })
      )
      expect(Either.isLeft(result) && result.left.reason).toBe("timeout")
      expect(Date.now() - started).toBeGreaterThanOrEqual(140)
      // A request that is answered in time is not cut short by that timer.
      const answering = yield* TestReceiver.start(() => 204)
      const answered = yield* client.request({ method: "POST", url: answering.url(), body: "{}", timeoutMs: 150 })
      expect(answered.status).toBe(204)
    }))

  it.effect("a closed port is a network error", () =>
    Effect.gen(function*() {
      const client = NodeOutboundHttp.make({ allowPrivateNetworks: true })
      expect(yield* refusedReason(client, "http://127.0.0.1:1/")).toBe("network")
    }))
})
