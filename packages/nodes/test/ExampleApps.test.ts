import { Appexec } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import * as FakeOrigin from "./support/FakeOrigin.js"
import { describeImage, download, layer, run, testImage } from "./support/Instance.js"

const APPS = join(import.meta.dirname, "../../server/apps")
const example = (name: string): unknown => JSON.parse(readFileSync(join(APPS, `${name}.json`), "utf8"))

describe("example apps", () => {
  it.scoped("every example imports with the built-in nodes, is public and describes itself", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const files = readdirSync(APPS).filter((f) => f.endsWith(".json"))
      const ours = ["poster", "thumbnail", "caption", "provider", "long-running"].map((name) => `${name}.json`)
      for (const file of ours) {
        expect(files).toContain(file)
        const app = yield* appexec.apps.import(JSON.parse(readFileSync(join(APPS, file), "utf8")))
        expect(app.isPublic, file).toBe(true)
        expect(app.description?.length ?? 0, file).toBeGreaterThan(60)
      }
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
