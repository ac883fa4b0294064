/**
 * The example apps of `appexec serve` (`apps/`), imported and run in-process with every built-in
 * node (those of `@appexec/nodes`, `@appexec/nodes-image` and `@appexec/nodes-video`), their
 * images and videos decoded for real.
 */
import { Appexec } from "@appexec/core"
import { builtinNodes } from "@appexec/nodes"
import { imageNodes } from "@appexec/nodes-image"
import { videoNodes } from "@appexec/nodes-video"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import sharp from "sharp"
import { colourAt, ffprobe } from "../../nodes-video/test/support/Video.js"
import * as FakeOrigin from "../../nodes/test/support/FakeOrigin.js"
import { describeImage, testImage } from "../../nodes/test/support/Images.js"
import * as Instance from "../../nodes/test/support/Instance.js"

const APPS = join(import.meta.dirname, "../apps")
const { download, run } = Instance

/** The test instance of the nodes' tests with every built-in node. */
const layer = () => Instance.layer({ nodes: [...builtinNodes, ...imageNodes, ...videoNodes] })
const example = (name: string): unknown => JSON.parse(readFileSync(join(APPS, `${name}.json`), "utf8"))

describe("example apps", () => {
  it.scoped("every example imports with the built-in nodes, is public and describes itself", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const files = readdirSync(APPS).filter((f) => f.endsWith(".json"))
      const ours = ["poster", "thumbnail", "caption", "provider", "long-running", "ken-burns"].map((name) =>
        `${name}.json`
      )
      for (const file of ours) {
        expect(files).toContain(file)
        const app = yield* appexec.apps.import(JSON.parse(readFileSync(join(APPS, file), "utf8")))
        expect(app.isPublic, file).toBe(true)
        expect(app.description?.length ?? 0, file).toBeGreaterThan(60)
      }
    }).pipe(Effect.provide(layer())))

  it.scoped("every provider example imports, is public, and names in its description the secret its provider node uses", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const dir = join(APPS, "providers")
      const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort()
      expect(files).toEqual(["fal-image.json", "openai-chat.json", "openai-image.json", "replicate-image.json"])
      const secrets: Record<string, string> = {}
      for (const file of files) {
        const definition = JSON.parse(readFileSync(join(dir, file), "utf8")) as {
          nodes: ReadonlyArray<{ type: string; config?: { secret?: string } }>
        }
        const app = yield* appexec.apps.import(definition)
        expect(app.isPublic, file).toBe(true)
        const provider = definition.nodes.filter((n) => n.type.startsWith("provider."))
        expect(provider, file).toHaveLength(1)
        secrets[file] = provider[0]!.config!.secret!
        expect(app.description, file).toContain(`Needs the instance secret ${secrets[file]}.`)
      }
      expect(secrets).toEqual({
        "fal-image.json": "FAL_KEY",
        "openai-chat.json": "OPENAI_API_KEY",
        "openai-image.json": "OPENAI_API_KEY",
        "replicate-image.json": "REPLICATE_API_TOKEN"
      })
    }).pipe(Effect.provide(layer())))

  it.scoped("poster: a 512×512 PNG and its title", () =>
    Effect.gen(function*() {
      const done = yield* run(example("poster"), { prompt: "A lighthouse at dusk", style: "neon" })
      expect(done.status).toBe("completed")
      expect(done.outputs.map((o) => [o.id, o.type, o.status])).toEqual([
        ["poster", "image", "completed"],
        ["caption", "text", "completed"]
      ])
      expect(done.outputs[1]!.value).toBe("A lighthouse at dusk (neon)")
      const image = yield* describeImage((yield* download(done.outputs[0]!.value!)).bytes)
      expect(image).toEqual({ width: 512, height: 512, format: "png" })
    }).pipe(Effect.provide(layer())))

  it.scoped("thumbnail: a JPEG URL becomes a 256×256 WebP", () =>
    Effect.gen(function*() {
      const jpeg = yield* testImage(1024, 768, "jpeg")
      const origin = yield* FakeOrigin.start({
        "/photo.jpg": { headers: { "content-type": "image/jpeg" }, body: jpeg }
      })
      const done = yield* run(example("thumbnail"), { image: origin.url("/photo.jpg") })
      expect(done.errorMessage).toBeNull()
      const blob = yield* download(done.outputs[0]!.value!)
      expect(blob.contentType).toBe("image/webp")
      expect(yield* describeImage(blob.bytes)).toEqual({ width: 256, height: 256, format: "webp" })
    }).pipe(Effect.provide(layer())))

  it.scoped("caption: a captioned image in the original format and size", () =>
    Effect.gen(function*() {
      const jpeg = yield* testImage(640, 480, "jpeg")
      const origin = yield* FakeOrigin.start({
        "/photo.jpg": { headers: { "content-type": "image/jpeg" }, body: jpeg }
      })
      const done = yield* run(example("caption"), { image: origin.url("/photo.jpg"), text: "Greetings" })
      expect(done.errorMessage).toBeNull()
      expect(yield* describeImage((yield* download(done.outputs[0]!.value!)).bytes)).toEqual({
        width: 640,
        height: 480,
        format: "jpeg"
      })
    }).pipe(Effect.provide(layer())))

  it.scoped("caption: its text takes several lines, and a line break in it starts a new line on the picture", () =>
    Effect.gen(function*() {
      const definition = example("caption") as { nodes: ReadonlyArray<{ id: string; config?: object }> }
      expect(definition.nodes.find((node) => node.id === "text")?.config).toMatchObject({ multiline: true })
      const png = yield* testImage(640, 480)
      const origin = yield* FakeOrigin.start({ "/photo.png": { headers: { "content-type": "image/png" }, body: png } })
      /** The height of the dark band at the bottom of the captioned picture of `text`, in pixels. */
      const bandOf = (text: string) =>
        Effect.gen(function*() {
          const done = yield* run(definition, { image: origin.url("/photo.png"), text })
          expect(done.errorMessage).toBeNull()
          const bytes = (yield* download(done.outputs[0]!.value!)).bytes
          // The left edge holds no text: a row is in the band when its red is darkened.
          const column = yield* Effect.promise(() =>
            sharp(bytes).extract({ left: 2, top: 0, width: 1, height: 480 }).removeAlpha().raw().toBuffer()
          )
          let rows = 0
          while (rows < 480 && column[(479 - rows) * 3]! < 160) rows++
          return rows
        })
      const oneLine = yield* bandOf("Low tide at the harbour")
      const twoLines = yield* bandOf("Low tide\nat the harbour")
      expect(oneLine).toBeGreaterThan(0)
      expect(twoLines).toBeGreaterThan(oneLine * 1.4)
    }).pipe(Effect.provide(layer())))

  it.scoped("ken-burns: an image URL becomes a 5 s 1280×720 H.264 MP4 zooming in, and its first frame a JPEG", () =>
    Effect.gen(function*() {
      const png = yield* testImage(900, 700)
      const origin = yield* FakeOrigin.start({ "/photo.png": { headers: { "content-type": "image/png" }, body: png } })
      const done = yield* run(example("ken-burns"), { image: origin.url("/photo.png") })
      expect(done.errorMessage).toBeNull()
      expect(done.outputs.map((o) => [o.id, o.type, o.status])).toEqual([
        ["video", "video", "completed"],
        ["poster", "image", "completed"]
      ])
      const video = yield* download(done.outputs[0]!.value!)
      expect(video.contentType).toBe("video/mp4")
      const probed = yield* ffprobe(video.bytes)
      expect(probed.video).toMatchObject({ codec: "h264", width: 1280, height: 720, frames: 125 })
      expect(probed.duration).toBeCloseTo(5, 1)
      // The frame is the picture's colour: the URL's image, not a placeholder drawn from the prompt.
      expect(yield* colourAt(video.bytes, 0)).toEqual([
        expect.closeTo(200, -1.2),
        expect.closeTo(40, -1.2),
        expect.closeTo(90, -1.2)
      ])
      const poster = yield* download(done.outputs[1]!.value!)
      expect(yield* describeImage(poster.bytes)).toEqual({ width: 1280, height: 720, format: "jpeg" })
    }).pipe(Effect.provide(layer())))

  it.scoped("long-running: stays running until 30 s have passed, then completes", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(example("long-running"))
      const principal = yield* TestHarness.signIn()
      const started = yield* appexec.executions.start(principal, app.appId, { message: "hello" })
      const waiting = yield* Effect.fork(appexec.executions.await(started.executionId))
      yield* TestClock.adjust(Duration.seconds(29))
      expect((yield* appexec.executions.get(principal, started.executionId)).status).toBe("running")
      yield* TestClock.adjust(Duration.seconds(1))
      const done = yield* Fiber.join(waiting)
      expect(done.outputs[0]).toMatchObject({ type: "text", value: "You said: hello", status: "completed" })
    }).pipe(Effect.provide(layer())))

  it.scoped("provider: its request is well formed (checked against a local stand-in of the endpoint)", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({
        "/anything": (request) => ({
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ json: JSON.parse(request.body), method: request.method })
        })
      })
      const definition = JSON.parse(JSON.stringify(example("provider")).replace("https://httpbin.org", origin.url("")))
      const done = yield* run(definition, { prompt: "hello provider" })
      expect(done.errorMessage).toBeNull()
      expect(done.outputs[0]).toMatchObject({ type: "text", value: "hello provider" })
      expect(origin.received[0]).toMatchObject({ method: "POST", path: "/anything" })
    }).pipe(Effect.provide(layer())))
})
