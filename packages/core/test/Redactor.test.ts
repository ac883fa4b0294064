/**
 * The redactor on its own: a registered value is masked as it is sent and in its usual encodings
 * (URL-encoded, JSON-escaped, base64 and base64url at any alignment, after `Bearer `, inside a
 * `Basic` credential), with a property test that no encoding of any registered value survives;
 * nothing is scanned while nothing is registered; short values are not registered; the oldest
 * values are forgotten past the bound; the master key's texts; and the logger wrapper, which masks
 * a line's message, cause and annotations and wraps a logger once.
 */
import { Redactor } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, FastCheck as fc, FiberId, FiberRefs, HashMap, List, Logger, LogLevel, Redacted } from "effect"
import { base64Of, encodingsOf } from "../src/internal/crypto/SecretEncodings.js"

const SECRET = "sk-RTSECRET-9f8e/7d6c+5b4a é\"x"
const utf8 = (text: string) => new TextEncoder().encode(text)
const base64 = (text: string) => base64Of(utf8(text))
const base64Url = (text: string) => base64(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")

const registered = (...values: Array<string>) => {
  const redactor = Redactor.make()
  for (const value of values) redactor.register(Redacted.make(value))
  return redactor
}

/** Log options as a fiber would hand them to a logger. */
const lineOf = (
  message: unknown,
  cause: Cause.Cause<unknown> = Cause.empty,
  annotations: Record<string, unknown> = {}
): Logger.Logger.Options<unknown> => ({
  fiberId: FiberId.none,
  logLevel: LogLevel.Warning,
  message,
  cause,
  context: FiberRefs.empty(),
  spans: List.empty(),
  annotations: HashMap.fromIterable(Object.entries(annotations)),
  date: new Date(0)
})

describe("Redactor", () => {
  it("masks a registered value as sent and in each usual encoding", () => {
    const redactor = registered(SECRET)
    const forms = [
      SECRET,
      `Bearer ${SECRET}`,
      encodeURIComponent(SECRET),
      new URLSearchParams({ token: SECRET }).toString(),
      JSON.stringify({ token: SECRET }),
      JSON.stringify({ token: SECRET }).replace(
        /[^\x20-\x7e]/g,
        (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`
      ),
      base64(SECRET),
      base64Url(SECRET),
      base64(`Bearer ${SECRET}`),
      base64(`user:${SECRET}`),
      base64(`ab:${SECRET}`),
      base64Url(`a:${SECRET}!`)
    ]
    for (const form of forms) {
      const masked = redactor.text(`echo: ${form} (end)`)
      expect(masked, form).toContain("[secret]")
      expect(masked).not.toContain(SECRET)
      expect(masked).not.toContain(base64(SECRET).slice(0, 12))
      expect(masked).not.toContain(encodeURIComponent(SECRET))
    }
    expect(redactor.text(`Authorization: Bearer ${SECRET}`)).toBe("Authorization: Bearer [secret]")
  })

  it("masks the credential and the password a Basic value stands for", () => {
    const credential = "operator:correct horse battery"
    const redactor = registered(btoa(credential))
    expect(redactor.text(`got Basic ${btoa(credential)}`)).toBe("got Basic [secret]")
    expect(redactor.text(`user ${credential}`)).toBe("user [secret]")
    expect(redactor.text("password was correct horse battery!")).toBe("password was [secret]!")
  })

  it("scans nothing while nothing is registered, and registers no value shorter than 8 characters", () => {
    const redactor = Redactor.make()
    expect(redactor.active()).toBe(false)
    const text = "a text that holds no secret"
    expect(redactor.text(text)).toBe(text)
    redactor.register("short")
    expect(redactor.active()).toBe(false)
    expect(redactor.text("short and sweet")).toBe("short and sweet")
    redactor.register("long enough")
    expect(redactor.active()).toBe(true)
    expect(redactor.text("long enough!")).toBe("[secret]!")
  })

  it("masks the master key's base64, base64url and hex texts", () => {
    const key = new Uint8Array(32).map((_, i) => (i * 37 + 251) % 256)
    const redactor = Redactor.make()
    redactor.registerBytes(Redacted.make(key))
    const hex = [...key].map((b) => b.toString(16).padStart(2, "0")).join("")
    for (const form of [base64Of(key), base64Of(key).replace(/=+$/, ""), hex, hex.toUpperCase()]) {
      expect(redactor.text(`APPEXEC_MASTER_KEY=${form}`)).toBe("APPEXEC_MASTER_KEY=[secret]")
    }
    const url = base64Of(key).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")
    expect(redactor.text(url)).toBe("[secret]")
  })

  it("forgets the oldest values past its bound, keeping the ones registered again", () => {
    const redactor = Redactor.make()
    redactor.register("value-number-0")
    for (let i = 1; i <= Redactor.MAX_VALUES; i++) {
      redactor.register(`value-number-${i}`)
      if (i === Redactor.MAX_VALUES / 2) redactor.register("value-number-0")
    }
    expect(redactor.text(`value-number-1 value-number-0 value-number-${Redactor.MAX_VALUES}`)).toBe(
      "value-number-1 [secret] [secret]"
    )
  })

  it("never lets a registered value survive in any of its encodings, anywhere in a text", () =>
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", minLength: 8, maxLength: 40 }).filter((s) =>
          !/[[\]]/.test(s) && s.trim().length >= 8
        ),
        fc.string({ maxLength: 20 }),
        fc.string({ maxLength: 20 }),
        fc.uint8Array({ maxLength: 5 }),
        fc.uint8Array({ maxLength: 5 }),
        (secret, before, after, junkBefore, junkAfter) => {
          const redactor = registered(secret)
          for (const encoding of encodingsOf(secret)) {
            if (encoding.length < Redactor.MIN_LENGTH) continue
            expect(redactor.text(`${before}${encoding}${after}`)).not.toContain(encoding)
          }
          // Inside a longer base64 text, at whatever alignment: no run of its own characters survives.
          const bytes = utf8(secret)
          const inside = new Uint8Array([...junkBefore, ...bytes, ...junkAfter])
          const masked = redactor.text(`${before}${base64Of(inside)}${after}`)
          const own = base64Of(bytes).replace(/=+$/, "")
          const aligned = junkBefore.length % 3 === 0 ? own.slice(0, 4 * Math.floor(bytes.length / 3)) : undefined
          if (aligned !== undefined && aligned.length >= 8) expect(masked).not.toContain(aligned)
          expect(masked).toContain("[secret]")
        }
      ),
      { numRuns: 300 }
    ))

  it("masks a logged line's message, cause and annotations; a masking logger is wrapped once", () => {
    const redactor = registered(SECRET)
    const seen: Array<Logger.Logger.Options<unknown>> = []
    const logger = redactor.logger(Logger.make((options) => seen.push(options)))
    expect(redactor.logger(logger)).toBe(logger)
    logger.log(lineOf(
      [`the endpoint answered 401: bad token Bearer ${SECRET}`, { detail: [base64(SECRET)] }],
      Cause.fail(new Error(`refused ${encodeURIComponent(SECRET)}`)),
      { header: `Bearer ${SECRET}`, attempt: 2 }
    ))
    const line = seen[0]!
    const written = JSON.stringify([line.message, Object.fromEntries(HashMap.toEntries(line.annotations))]) +
      Cause.pretty(line.cause)
    expect(written).toContain("bad token Bearer [secret]")
    expect(written).toContain("refused [secret]")
    for (const form of [SECRET, base64(SECRET), encodeURIComponent(SECRET), JSON.stringify(SECRET).slice(1, -1)]) {
      expect(written).not.toContain(form)
    }
    expect(HashMap.get(line.annotations, "attempt")._tag).toBe("Some")
  })

  it.effect("masks the lines of every logger an instance's fibers log through (layerLoggers)", () =>
    Effect.gen(function*() {
      const redactor = registered(SECRET)
      const lines: Array<unknown> = []
      yield* Effect.logWarning(`echo ${SECRET}`).pipe(
        Effect.provide(Redactor.layerLoggers),
        Effect.provide(Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => lines.push(message)))),
        Effect.provideService(Redactor.Redactor, redactor)
      )
      expect(lines).toEqual([["echo [secret]"]])
    }))
})
