import { AppexecConfig, Errors, MediaUrls } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Layer, Redacted } from "effect"

const refusal = (overrides: Partial<AppexecConfig.AppexecOptions>) =>
  Either.match(AppexecConfig.resolve(overrides), { onLeft: (e) => e.message, onRight: () => "accepted" })

describe("instance settings", () => {
  it("are one schema: every field has its description beside it, and the defaults are what decoding nothing gives", () => {
    const names = Object.keys(AppexecConfig.Options.from.fields)
    expect(names.length).toBeGreaterThanOrEqual(25)
    expect(Object.keys(AppexecConfig.descriptions)).toEqual(names)
    for (const name of names) expect(AppexecConfig.descriptions[name], name).toMatch(/^[A-Z].{10,}\.$/)
    const d = AppexecConfig.defaults
    expect(Duration.toMillis(d.lease)).toBe(30_000)
    expect(Duration.toMillis(d.renewEvery)).toBe(10_000)
    expect(d.maxAttempts).toBe(3)
    expect(d.workerConcurrency).toBe(4)
    expect(d.webhookRetryDelays.map(Duration.toMillis)).toEqual([5_000, 30_000, 120_000])
    expect(Duration.toMillis(d.retention)).toBe(30 * 86_400_000)
    expect(d.maxRunningPerWorkspace).toBeUndefined()
    expect(d.previousMasterKeys).toEqual([])
    expect(Either.getOrThrow(AppexecConfig.resolve({}))).toEqual(d)
  })

  it("each check says why, naming its setting", () => {
    const cases: ReadonlyArray<[Partial<AppexecConfig.AppexecOptions>, string]> = [
      [{ keyPrefix: "" }, "Invalid setting 'keyPrefix': 1 to 16 letters, digits or '_'"],
      [{ lease: 0 }, "Invalid setting 'lease': must be at least 1 ms"],
      [{ retention: "0 millis" }, "Invalid setting 'retention': must be at least 1 ms"],
      [{ idempotencyKeyTtl: "10 millis" }, "Invalid setting 'idempotencyKeyTtl': must be at least 1 s"],
      [{ lease: "soon" as Duration.DurationInput }, "Invalid setting 'lease': not a finite duration"],
      [
        { webhookRetryDelays: ["1 second", Duration.infinity] },
        "Invalid setting 'webhookRetryDelays': each delay must be a finite duration"
      ],
      [{ masterKey: Redacted.make(new Uint8Array(16)) }, "Invalid setting 'masterKey': must be 32 bytes"],
      [
        { masterKey: Redacted.make(new Uint8Array(32)), previousMasterKeys: [Redacted.make(new Uint8Array(8))] },
        "Invalid setting 'previousMasterKeys': each must be 32 bytes"
      ],
      [
        { previousMasterKeys: [Redacted.make(new Uint8Array(32))] },
        "Invalid setting 'previousMasterKeys': given without a masterKey"
      ]
    ]
    for (const [overrides, message] of cases) expect(refusal(overrides), message).toBe(message)
  })

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
