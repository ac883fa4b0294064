import { NodesSettings } from "@appexec/nodes"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import sharp from "sharp"
import * as FakeOrigin from "../../nodes/test/support/FakeOrigin.js"
import { testImage } from "../../nodes/test/support/Images.js"
import { run } from "../../nodes/test/support/Instance.js"
import { layer } from "./support/ImageInstance.js"

const thumbnail = (accept: ReadonlyArray<string> = ["image"]) => ({
  name: "Thumbnail",
  nodes: [
    { id: "photo", type: "input.url", label: "Photo", config: { name: "photo", required: true, accept } },
    { id: "resize", type: "image.resize", config: { width: 64, height: 64 } },
    { id: "thumb", type: "output.image", label: "Thumbnail" }
  ],
  edges: [
    { source: "photo", target: "resize" },
    { source: "resize", target: "thumb" }
  ]
})

/** Runs the thumbnail app on `photo` and checks it failed with `expected` in both errors. */
const failsWith = (photo: string, expected: string, definition: unknown = thumbnail()) =>
  Effect.gen(function*() {
    const done = yield* run(definition, { photo })
    expect(done.status).toBe("failed")
    expect(done.errorMessage).toContain(expected)
    expect(done.errorMessage).toMatch(/^node 'resize' \(image\.resize\) failed: /)
    expect(done.outputs).toEqual([
      { id: "thumb", label: "Thumbnail", type: "image", value: null, status: "failed", error: done.errorMessage }
    ])
    return done.errorMessage!
  })

describe("media inputs", () => {
  it("default size limit is 25 MiB", () => {
    expect(NodesSettings.defaults.media.maxBytes).toBe(25 * 1024 * 1024)
  })

  it.scoped("a URL that answers 404 fails the execution", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({})
      const message = yield* failsWith(origin.url("/missing.png"), "image URL answered 404")
      expect(message).toBe("node 'resize' (image.resize) failed: image URL answered 404")
    }).pipe(Effect.provide(layer())))

  it.scoped("a URL that is not an image fails the execution", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({
        "/page": { headers: { "content-type": "text/html; charset=utf-8" }, body: "<html>hello</html>" }
      })
      yield* failsWith(origin.url("/page"), "not an image: the URL answered with content type text/html")
    }).pipe(Effect.provide(layer())))

  it.scoped("an image bigger than the limit fails the execution as too large", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({
        "/huge.png": { headers: { "content-type": "image/png" }, body: new Uint8Array(100 * 1024) }
      })
      yield* failsWith(origin.url("/huge.png"), "image too large: the URL answered more than 64 KiB")
    }).pipe(Effect.provide(layer({ settings: { media: { maxBytes: 64 * 1024 } } }))))

  it.scoped("a URL whose host resolves to a private address is refused before any request", () =>
    Effect.gen(function*() {
      const message = yield* failsWith("http://images.example.com/cat.png", "image URL refused: address not allowed")
      // The consumer learns the category, not what the host resolves to.
      expect(message).toBe(
        "node 'resize' (image.resize) failed: image URL refused: address not allowed; outbound requests reach " +
          "public addresses only, unless private networks are allowed (appexec serve --allow-private-networks, " +
          "or APPEXEC_ALLOW_PRIVATE_NETWORKS=true)"
      )
      expect(message).not.toMatch(/10\.0\.0\.7/)
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

  it.scoped("an image given to a parameter that accepts only video is refused", () =>
    Effect.gen(function*() {
      const png = yield* testImage(10, 10)
      const origin = yield* FakeOrigin.start({ "/a.png": { headers: { "content-type": "image/png" }, body: png } })
      yield* failsWith(
        origin.url("/a.png"),
        "not accepted media: the URL answered with content type image/png; accepted: video",
        thumbnail(["video"])
      )
    }).pipe(Effect.provide(layer())))

  it.scoped("bytes that claim to be an image but are not fail as not read, saying why", () =>
    Effect.gen(function*() {
      // A real PNG of noise (so that its pixel data is long), cut in half: its header reads, its
      // pixels do not (sharp decodes while it encodes).
      const noise = Uint8Array.from({ length: 64 * 48 * 3 }, (_, i) => (i * 7919) % 251)
      const png = yield* Effect.promise(() =>
        sharp(noise, { raw: { width: 64, height: 48, channels: 3 } }).png().toBuffer()
      )
      const truncated = png.subarray(0, Math.floor(png.length / 2))
      // PNG's signature followed by a page: a polyglot posing as a PNG.
      const polyglot = new Uint8Array([...png.subarray(0, 8), ...new TextEncoder().encode("<html>hi</html>")])
      const origin = yield* FakeOrigin.start({
        "/fake.png": { headers: { "content-type": "image/png" }, body: "not really" },
        "/truncated.png": { headers: { "content-type": "image/png" }, body: truncated },
        "/polyglot.png": { headers: { "content-type": "image/png" }, body: polyglot }
      })
      const failed = "node 'resize' (image.resize) failed: the image could not be read: "
      expect(yield* failsWith(origin.url("/fake.png"), "could not be read")).toBe(
        `${failed}its bytes are not an image in any format this instance reads`
      )
      expect(yield* failsWith(origin.url("/truncated.png"), "could not be read")).toBe(
        `${failed}the PNG data is cut short or damaged`
      )
      expect(yield* failsWith(origin.url("/polyglot.png"), "could not be read")).toBe(
        `${failed}its bytes begin like a PNG image but are not a valid PNG`
      )
    }).pipe(Effect.provide(layer())))

  it.scoped("a redirect is not followed and names its status", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({ "/moved.png": { status: 302, headers: { location: "/elsewhere.png" } } })
      yield* failsWith(origin.url("/moved.png"), "image URL answered 302 (redirects are not followed")
    }).pipe(Effect.provide(layer())))
})
