import { AppexecConfig, Errors, MediaUrls } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Layer, Redacted } from "effect"

const refusal = (overrides: Partial<AppexecConfig.AppexecOptions>) =>
  Either.match(AppexecConfig.resolve(overrides), { onLeft: (e) => e.message, onRight: () => "accepted" })

describe("instance settings", () => {
  it("durations are read from any Duration input, and the defaults stand where nothing is given", () => {
    const settings = Either.getOrThrow(
      AppexecConfig.resolve({ lease: "1 minute", renewEvery: 5_000, webhookRetryDelays: ["1 second", 90_000] })
    )
    expect(Duration.toMillis(settings.lease)).toBe(60_000)
    expect(Duration.toMillis(settings.renewEvery)).toBe(5_000)
    expect(settings.webhookRetryDelays.map(Duration.toMillis)).toEqual([1_000, 90_000])
    expect(Duration.toMillis(settings.defaultTimeout)).toBe(10 * 60_000)
    expect(settings.webhookRetryDelays).toHaveLength(2)
  })

  it("settings that cannot work are refused, naming the setting", () => {
    expect(refusal({ lease: "10 seconds", renewEvery: "10 seconds" })).toBe(
      "Invalid setting 'renewEvery': must be shorter than lease"
    )
    expect(refusal({ workerConcurrency: 0 })).toBe(
      "Invalid setting 'workerConcurrency': must be a whole number of at least 1"
    )
    expect(refusal({ maxRunningPerWorkspace: 0 })).toBe(
      "Invalid setting 'maxRunningPerWorkspace': must be a whole number of at least 1"
    )
    expect(refusal({ maxAttempts: 1.5 })).toBe("Invalid setting 'maxAttempts': must be a whole number of at least 1")
    expect(refusal({ pollInterval: Duration.infinity })).toBe("Invalid setting 'pollInterval': not a finite duration")
    for (const webhookBrand of ["Acme Corp", "-Acme", "Acme--Cloud", "A".repeat(33)]) {
      expect(refusal({ webhookBrand })).toBe(
        "Invalid setting 'webhookBrand': 1 to 32 letters or digits, words joined by single hyphens"
      )
    }
    expect(refusal({ webhookBrand: "Acme-Cloud" })).toBe("accepted")
    expect(refusal({ signingKeyJwk: { kty: "OKP", crv: "Ed25519", d: "short" } })).toContain(
      "Invalid setting 'signingKeyJwk'"
    )
  })

  it.effect("the layer fails with the typed error instead of starting", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(AppexecConfig.AppexecConfig.layer({ keyPrefix: "not a prefix!" })))
      expect(error).toBeInstanceOf(Errors.InvalidConfiguration)
      expect(error.setting).toBe("keyPrefix")
    }).pipe(Effect.scoped))

  it.effect("media URLs refuse a short secret and a base URL that is not http(s), as typed errors", () =>
    Effect.gen(function*() {
      const short = yield* Effect.flip(
        Layer.build(MediaUrls.layer({ mode: "signed", baseUrl: "http://x", secret: Redacted.make("short") }))
      )
      expect(short).toEqual(
        new Errors.InvalidConfiguration({ setting: "media URL secret", reason: "must be at least 32 bytes" })
      )
      const relative = yield* Effect.flip(Layer.build(MediaUrls.layer({ mode: "public", baseUrl: "/media" })))
      expect(relative.setting).toBe("media base URL")
    }).pipe(Effect.scoped))
})
