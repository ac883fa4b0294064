/**
 * The settings of the built-in nodes are one schema: each field with its default, its variable
 * and its description beside it, read back by `fieldsOf` (from which `appexec` makes its flags and
 * docs); `layerConfig` reads every variable, refusing a bad value by naming its variable.
 */
import { NodesSettings } from "@appexec/nodes"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"

const read = (env: Record<string, string>) =>
  NodesSettings.NodesSettings.pipe(
    Effect.provide(NodesSettings.layerConfig()),
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
  )

describe("the nodes' settings", () => {
  it("each field says its variable, default and what it is for; the defaults are the schema's", () => {
    const groups = { media: NodesSettings.Media, http: NodesSettings.Http, video: NodesSettings.Video } as const
    for (const [group, schema] of Object.entries(groups)) {
      const fields = NodesSettings.fieldsOf(schema)
      expect(fields.map((f) => f.key)).toEqual(Object.keys(schema.fields))
      for (const field of fields) {
        expect(field.variable, field.key).toMatch(/^APPEXEC_[A-Z_]+$/)
        expect(field.description.length, field.key).toBeGreaterThan(10)
        expect(field.default, `${group}.${field.key}`).toBe(
          Reflect.get(Reflect.get(NodesSettings.defaults, group), field.key)
        )
      }
    }
    expect(NodesSettings.fieldsOf(NodesSettings.Video).find((f) => f.key === "ffmpeg")).toMatchObject({
      variable: "APPEXEC_FFMPEG",
      kind: "text",
      default: undefined
    })
    expect(NodesSettings.defaults.media).toEqual({
      timeoutMs: 30_000,
      maxBytes: 25 * 1024 * 1024,
      maxPixels: 50_000_000
    })
  })

  it.effect("layerConfig reads every group's variables; the others keep their defaults", () =>
    Effect.gen(function*() {
      const settings = yield* read({ APPEXEC_MEDIA_MAX_BYTES: "1024", APPEXEC_HTTP_TIMEOUT_MS: "5000" })
      expect(settings.media.maxBytes).toBe(1024)
      expect(settings.http.timeoutMs).toBe(5000)
      expect(settings.http.maxBytes).toBe(NodesSettings.defaults.http.maxBytes)
      expect(settings.video).toEqual(NodesSettings.defaults.video)
    }))

  it.effect("a value that is not a positive whole number is refused, naming its variable", () =>
    Effect.gen(function*() {
      for (const value of ["0", "-5", "1.5", "lots"]) {
        const error = yield* Effect.flip(read({ APPEXEC_MEDIA_MAX_PIXELS: value }))
        expect(String(error), value).toContain("APPEXEC_MEDIA_MAX_PIXELS must be a positive integer")
      }
    }))
})
