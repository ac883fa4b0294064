import { MediaUrls } from "@appexec/core"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import sharp from "sharp"
import { BASE_URL, layer, run } from "./support/Instance.js"

/** Serves `MediaUrls.webHandler` on 127.0.0.1 (port 0) with node:http; stops with the scope. */
const mediaServer = Effect.gen(function* () {
  const handler = yield* MediaUrls.webHandler
  return yield* Effect.acquireRelease(
    Effect.async<{ readonly origin: string; readonly close: () => void }>((resume) => {
      const server = createServer((req, res) => {
        const headers = new Headers()
        for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value)
        void handler(new Request(`http://${req.headers.host}${req.url}`, { method: req.method ?? "GET", headers })).then(
          async (response) => {
            const out: Record<string, string> = {}
            response.headers.forEach((value, name) => {
              out[name] = value
            })
            res.writeHead(response.status, out)
            res.end(Buffer.from(await response.arrayBuffer()))
          }
        )
      })
      server.listen(0, "127.0.0.1", () =>
        resume(
          Effect.succeed({
            origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
            close: () => {
              server.closeAllConnections()
              server.close()
            }
          })
        )
      )
    }),
    (server) => Effect.sync(server.close)
  )
})

const poster = {
  name: "Poster",
  nodes: [
    { id: "prompt", type: "input.text", config: { name: "prompt", required: true } },
    { id: "render", type: "image.generate", config: { width: 320, height: 200, format: "jpeg" } },
    { id: "poster", type: "output.image", label: "Poster" }
  ],
  edges: [
    { source: "prompt", target: "render" },
    { source: "render", target: "poster" }
  ]
}

describe("media download over a real socket", () => {
  it.scoped("a produced image downloads with its headers until its URL expires", () =>
    Effect.gen(function* () {
      const server = yield* mediaServer
      const done = yield* run(poster, { prompt: "download me" })
      const value = done.outputs[0]!.value!
      expect(value.startsWith(`${BASE_URL}/media/`)).toBe(true)
      // The instance's base URL is a name; the test reaches the same path on the local socket.
      const local = value.replace(BASE_URL, server.origin)
      const response = yield* Effect.promise(() => fetch(local))
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("image/jpeg")
      expect(response.headers.get("cache-control")).toBe(`private, max-age=60, immutable`)
      const body = new Uint8Array(yield* Effect.promise(() => response.arrayBuffer()))
      expect(response.headers.get("content-length")).toBe(String(body.length))
      const meta = yield* Effect.promise(() => sharp(body).metadata())
      expect([meta.width, meta.height, meta.format]).toEqual([320, 200, "jpeg"])

      const forged = yield* Effect.promise(() => fetch(local.replace(/sig=.{4}/, "sig=AAAA")))
      expect(forged.status).toBe(404)
      yield* TestClock.adjust(Duration.seconds(59))
      expect((yield* Effect.promise(() => fetch(local))).status).toBe(200)
      yield* TestClock.adjust(Duration.seconds(2))
      const expired = yield* Effect.promise(() => fetch(local))
      expect(expired.status).toBe(404)
    }).pipe(Effect.provide(layer({ ttlSeconds: 60 }))))
})
