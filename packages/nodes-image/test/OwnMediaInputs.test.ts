/**
 * The instance's own media URLs as `url` inputs: a poster's signed URL feeds a thumbnail app
 * read from the blob store, with private networks not allowed and no host name resolved (no
 * request); an altered or expired URL of the instance fails the node with a message that says
 * so. A URL refused by the address policy names `--allow-private-networks`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as FakeOrigin from "../../nodes/test/support/FakeOrigin.js"
import { describeImage } from "../../nodes/test/support/Images.js"
import { BASE_URL, download, run } from "../../nodes/test/support/Instance.js"
import { layer } from "./support/ImageInstance.js"

const poster = {
  name: "Poster",
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "render", type: "image.placeholder", label: "Render", config: { width: 320, height: 200 } },
    { id: "poster", type: "output.image", label: "Poster" }
  ],
  edges: [
    { source: "prompt", target: "render" },
    { source: "render", target: "poster" }
  ]
}

const thumbnail = {
  name: "Thumbnail",
  nodes: [
    { id: "image", type: "input.url", label: "Image", config: { name: "image", required: true, accept: ["image"] } },
    { id: "size", type: "image.resize", config: { width: 64, height: 48, fit: "cover" } },
    { id: "webp", type: "image.convert", config: { format: "webp" } },
    { id: "thumbnail", type: "output.image", label: "Thumbnail" }
  ],
  edges: [
    { source: "image", target: "size" },
    { source: "size", target: "webp" },
    { source: "webp", target: "thumbnail" }
  ]
}

/**
 * An instance whose outbound client refuses private networks, and the host names it was asked to
 * resolve (every one resolves to loopback, which it refuses); media URLs last `ttlSeconds`.
 */
const guarded = (ttlSeconds?: number) => {
  const resolved: Array<string> = []
  return {
    resolved,
    instance: layer({
      ...(ttlSeconds === undefined ? {} : { ttlSeconds }),
      outbound: {
        allowPrivateNetworks: false,
        resolver: (hostname) =>
          Effect.sync(() => {
            resolved.push(hostname)
            return [{ address: "127.0.0.1", family: 4 as const }]
          })
      }
    })
  }
}

/** Runs the poster app and answers its image URL. */
const posterUrl = Effect.gen(function*() {
  const done = yield* run(poster, { prompt: "chained apps" })
  expect(done.status).toBe("completed")
  const url = done.outputs[0]!.value!
  expect(url.startsWith(`${BASE_URL}/media/executions/`)).toBe(true)
  return url
})

describe("the instance's own media URLs as inputs", () => {
  const own = guarded()
  it.scoped("a poster's signed URL feeds the thumbnail app from the blob store, without any request", () =>
    Effect.gen(function*() {
      const url = yield* posterUrl
      const done = yield* run(thumbnail, { image: url })
      expect(done.errorMessage).toBeNull()
      expect(done.status).toBe("completed")
      const blob = yield* download(done.outputs[0]!.value!)
      expect(blob.contentType).toBe("image/webp")
      expect(yield* describeImage(blob.bytes)).toEqual({ width: 64, height: 48, format: "webp" })
      expect(own.resolved).toEqual([])
    }).pipe(Effect.provide(own.instance)))

  const tampered = guarded()
  it.scoped("an altered media URL of the instance fails the node, saying so, without any request", () =>
    Effect.gen(function*() {
      const url = yield* posterUrl
      const altered = url.replace(/sig=([A-Za-z0-9_-])/, (_, c: string) => `sig=${c === "A" ? "B" : "A"}`)
      expect(altered).not.toBe(url)
      const done = yield* run(thumbnail, { image: altered })
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe(
        "node 'size' (image.resize) failed: image URL refused: this instance's media link is altered or not signed " +
          "by it (copy the whole link, with its exp and sig)"
      )
      expect(tampered.resolved).toEqual([])
    }).pipe(Effect.provide(tampered.instance)))

  const expired = guarded(60)
  it.scoped("an expired media URL of the instance fails the node as expired", () =>
    Effect.gen(function*() {
      const url = yield* posterUrl
      // The worker's timers run as virtual time passes: a minute is a few hundred wake-ups.
      yield* TestClock.adjust("61 seconds")
      const done = yield* run(thumbnail, { image: url })
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe(
        "node 'size' (image.resize) failed: image URL refused: this instance's media link has expired " +
          "(media links are valid for a limited time)"
      )
      expect(expired.resolved).toEqual([])
    }).pipe(Effect.provide(expired.instance)))
})

describe("refused addresses name the setting that allows them", () => {
  it.scoped("an image URL on a literal private address names it and --allow-private-networks", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({ "/cat.png": { headers: { "content-type": "image/png" }, body: "x" } })
      const url = origin.url("/cat.png")
      expect(new URL(url).hostname).toBe("127.0.0.1")
      const done = yield* run(thumbnail, { image: url })
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe(
        "node 'size' (image.resize) failed: image URL refused: its host 127.0.0.1 is a loopback address, which " +
          "outbound requests reach only when private networks are allowed (allowPrivateNetworks of " +
          "NodeOutboundHttp; appexec serve --allow-private-networks, or APPEXEC_ALLOW_PRIVATE_NETWORKS=true)"
      )
      expect(origin.received).toHaveLength(0)
    }).pipe(Effect.provide(layer({ outbound: { allowPrivateNetworks: false } }))))

  it.scoped("an image URL whose name resolves to a private address names --allow-private-networks, not the address", () =>
    Effect.gen(function*() {
      const done = yield* run(thumbnail, { image: "http://images.internal.example/cat.png" })
      expect(done.errorMessage).toBe(
        "node 'size' (image.resize) failed: image URL refused: address not allowed; outbound requests reach " +
          "public addresses only, unless private networks are allowed (appexec serve --allow-private-networks, " +
          "or APPEXEC_ALLOW_PRIVATE_NETWORKS=true)"
      )
      expect(done.errorMessage).not.toMatch(/10\.0\.0\.7/)
    }).pipe(
      Effect.provide(
        layer({
          outbound: {
            allowPrivateNetworks: false,
            resolver: () => Effect.succeed([{ address: "10.0.0.7", family: 4 }])
          }
        })
      )
    ))
})
