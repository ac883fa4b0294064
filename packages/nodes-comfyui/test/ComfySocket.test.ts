/**
 * The ComfyUI websocket goes through the outbound guard as HTTP requests do: a loopback or private
 * address is refused unless allowed (the socket is never opened), a host the operator allowed is
 * reached, and the socket connects to the address the guard checked (a name only the guard's
 * resolver knows still opens, against the test server).
 */
import { AddressPolicy, NodeOutboundHttp } from "@appexec/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Queue } from "effect"
import * as ComfySocket from "../src/internal/ComfySocket.js"
import * as ComfyServer from "./support/ComfyServer.js"

const resolver = (hostname: string) =>
  Effect.succeed(
    hostname === "comfy.test" ? [{ address: "127.0.0.1", family: 4 as const }] : [
      { address: "10.1.2.3", family: 4 as const }
    ]
  )

const guard = (allowHosts: ReadonlyArray<string>) =>
  NodeOutboundHttp.layer({
    allowPrivateNetworks: false,
    allowHosts: allowHosts.map((host) => Either.getOrThrow(AddressPolicy.parseAllowedHost(host))),
    resolver
  })

describe("the ComfyUI websocket", () => {
  it.live("is refused on a loopback or private address that is not allowed, and never opened", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make()
      const loopback = yield* ComfySocket.open(server.url, "appexec-a", "2 seconds").pipe(
        Effect.scoped,
        Effect.flip,
        Effect.provide(guard([]))
      )
      expect(loopback).toContain("Address not allowed")
      expect(server.connected("appexec-a")).toBe(false)
      const named = yield* ComfySocket.open("http://gpu.example:8188", "appexec-b", "2 seconds").pipe(
        Effect.scoped,
        Effect.flip,
        Effect.provide(guard([]))
      )
      // The guard's resolver answered a private address for the name: refused as well.
      expect(named).toContain("Address not allowed")
    }).pipe(Effect.scoped))

  it.live("opens to a host the operator allowed, at the address the guard checked", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make()
      const port = new URL(server.url).port
      yield* Effect.gen(function*() {
        const messages = yield* ComfySocket.open(`http://comfy.test:${port}`, "appexec-c", "2 seconds")
        const first = yield* Queue.take(messages)
        expect(first).toMatchObject({ _tag: "Event", type: "status" })
        expect(server.connected("appexec-c")).toBe(true)
      }).pipe(Effect.scoped, Effect.provide(guard([`comfy.test:${port}`])))
    }).pipe(Effect.scoped))
})
