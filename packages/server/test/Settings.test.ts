/**
 * The settings of the `appexec` command, defined once (docs/cli.md#settings): each has a name, a
 * variable, a description and a default taken from the module that owns it; what it shows it
 * reads back; a bad value is refused in words that say what is wanted and where it came from;
 * a flag wins over its variable, a variable over the config file, the file over the default.
 * Every duration goes through core's one parser (`AppexecConfig.parseDuration`).
 */
import { Api } from "@appexec/api"
import { AppexecConfig } from "@appexec/core"
import { RateLimit } from "@appexec/http"
import { NodesSettings } from "@appexec/nodes"
import { NodeListener } from "@appexec/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, FastCheck as fc, Option } from "effect"
import * as AdminCommands from "../src/commands/AdminCommands.js"
import * as ServeCommand from "../src/commands/ServeCommand.js"
import * as Database from "../src/Database.js"
import * as ApiSettings from "../src/settings/ApiSettings.js"
import * as Catalog from "../src/settings/Catalog.js"
import * as NodeSettings from "../src/settings/NodeSettings.js"
import * as Resolve from "../src/settings/Resolve.js"
import type * as Setting from "../src/settings/Setting.js"
import * as SharedSettings from "../src/settings/SharedSettings.js"
import * as StoreSettings from "../src/settings/StoreSettings.js"
import * as Values from "../src/settings/Values.js"
import * as WorkSettings from "../src/settings/WorkSettings.js"
import { parse, refusal, sources } from "./support/Settings.js"

/** What `setting` reads from `text`, or why not. */
const read = <A>(setting: Setting.Setting<A>, text: string) => setting.value.read(text)

describe("the duration parser (core's AppexecConfig.parseDuration)", () => {
  it("reads a whole number and ms, s, m, h or d; refuses anything else", () => {
    const cases: ReadonlyArray<[string, number]> = [
      ["500ms", 500],
      ["0s", 0],
      ["30s", 30_000],
      ["2m", 120_000],
      ["12h", 43_200_000],
      ["7d", 604_800_000],
      [" 10s ", 10_000]
    ]
    for (const [text, ms] of cases) {
      expect(Option.map(AppexecConfig.parseDuration(text), Duration.toMillis), text).toEqual(Option.some(ms))
    }
    for (const text of ["", "5", "s", "1.5s", "-1s", "+1s", "5 s", "5sec", "5S", "5x", "30 seconds", "1e3ms", "5s,"]) {
      expect(AppexecConfig.parseDuration(text), text).toEqual(Option.none())
    }
    expect(Option.map(AppexecConfig.parseDurations("5s,30s,2m"), (l) => l.map(Duration.toMillis))).toEqual(
      Option.some([5_000, 30_000, 120_000])
    )
    expect(AppexecConfig.parseDurations("5s,soon")).toEqual(Option.none())
  })

  it("reads back what a setting shows", () => {
    fc.assert(fc.property(fc.nat({ max: 1e12 }), (ms) => {
      const shown = Values.showDuration(Duration.millis(ms))
      expect(Option.map(AppexecConfig.parseDuration(shown), Duration.toMillis)).toEqual(Option.some(ms))
    }))
    fc.assert(fc.property(fc.integer({ min: 1, max: 2 ** 40 }), (bytes) => {
      expect(Values.bytes.read(Values.showBytes(bytes))).toEqual(Either.right(bytes))
    }))
  })
})

describe("every setting, defined once", () => {
  it("has a name, a variable and a description of its own, and the processes that use it", () => {
    expect(Catalog.all.length).toBeGreaterThanOrEqual(50)
    expect(new Set(Catalog.names).size).toBe(Catalog.all.length)
    expect(new Set(Catalog.all.map((s) => s.variable)).size).toBe(Catalog.all.length)
    for (const setting of Catalog.all) {
      expect(setting.name, setting.name).toMatch(/^[a-z][a-z0-9-]+$/)
      expect(setting.variable, setting.name).toMatch(/^APPEXEC_[A-Z0-9_]+$/)
      expect(setting.description.length, setting.name).toBeGreaterThan(15)
      expect(setting.parts.length, setting.name).toBeGreaterThan(0)
    }
  })

  it("takes its default from the module that owns it", () => {
    const engine = AppexecConfig.defaults
    expect(WorkSettings.lease.default).toEqual(engine.lease)
    expect(WorkSettings.maxAttempts.default).toBe(engine.maxAttempts)
    expect(WorkSettings.concurrency.default).toBe(engine.workerConcurrency)
    expect(WorkSettings.webhookTimeout.default).toEqual(engine.webhookTimeout)
    expect(WorkSettings.webhookClaimMargin.default).toEqual(engine.webhookClaimMargin)
    expect(WorkSettings.webhookRetryDelays.default).toEqual(engine.webhookRetryDelays)
    expect(WorkSettings.signingKeyGrace.default).toEqual(engine.signingKeyGrace)
    expect(WorkSettings.retention.default).toEqual(engine.retention)
    expect(ApiSettings.maxStreamsPerKey.default).toBe(engine.maxStreamsPerKey)
    expect(ApiSettings.rateLimit.default).toBe(RateLimit.defaults.limit)
    expect(ApiSettings.trustProxy.default).toBe(RateLimit.defaults.trustProxy)
    expect(ApiSettings.maxUpload.default).toBe(Api.DEFAULT_MAX_UPLOAD_BYTES)
    const connections = NodeListener.connectionDefaults
    expect(ApiSettings.maxConnections.default).toBe(connections.maxConnections)
    expect(ApiSettings.maxConnectionsPerIp.default).toBe(connections.maxConnectionsPerIp)
    expect(ApiSettings.headersTimeout.default).toEqual(connections.headersTimeout)
    expect(ApiSettings.requestTimeout.default).toEqual(connections.requestTimeout)
    expect(ApiSettings.keepAliveTimeout.default).toEqual(connections.keepAliveTimeout)
    for (const limit of NodeSettings.limits) {
      expect(limit.setting.default, limit.setting.name).toBe(
        Reflect.get(Reflect.get(NodesSettings.defaults, limit.group), limit.key)
      )
    }
    expect(NodeSettings.limits.map((l) => l.setting.name)).toContain("video-max-seconds")
  })

  it("reads back the default it shows", () => {
    for (const setting of Catalog.all) {
      const shown = setting.shownDefault
      if (/[\s`]/.test(shown)) continue
      const value = setting.readAny(shown)
      expect(Either.map(value, (v) => v.shown), setting.name).toEqual(Either.right(shown))
    }
    expect(read(WorkSettings.lease, WorkSettings.lease.shownDefault)).toEqual(Either.right(Duration.seconds(30)))
    expect(WorkSettings.webhookRetryDelays.shownDefault).toBe("5s,30s,2m")
    expect(ApiSettings.maxUpload.shownDefault).toBe("25MiB")
  })

  it("refuses a bad value in words that say what it wants", () => {
    const cases: ReadonlyArray<[Setting.Any, string, string]> = [
      [
        WorkSettings.lease,
        "0s",
        "'0s' is not a duration above zero (a whole number and ms, s, m, h or d, such as 30s or 7d)"
      ],
      [WorkSettings.lease, "2 minutes", "'2 minutes' is not a duration above zero"],
      [WorkSettings.signingKeyGrace, "soon", "'soon' is not a duration (a whole number"],
      [WorkSettings.webhookRetryDelays, "5s,x", "'5s,x' is not a list of durations such as 5s,30s,2m"],
      [WorkSettings.maxAttempts, "0", "'0' is not a positive number"],
      [ApiSettings.trustProxy, "yes", "give the number of proxies you trust, as in --trust-proxy 1 (got 'yes')"],
      [ApiSettings.port, "70000", "'70000' is not a port (0 to 65535)"],
      [ApiSettings.maxUpload, "25MB", "'25MB' is not a size above zero (bytes, or a whole number of KiB, MiB or GiB"],
      [ApiSettings.noWorker, "maybe", "'maybe' is neither true nor false"],
      [SharedSettings.publicUrl, "example.com", "'example.com' is not an http(s) URL"],
      [SharedSettings.media, "s3://Media", "'Media' is not a bucket name"],
      [SharedSettings.allowHosts, "a b", "'a b' is not a host: write name, name:port, an IP address, or [IPv6]:port"],
      [StoreSettings.database, "mysql://u:secret@h/db", "'mysql://u:…@h/db' is not a postgres:// or postgresql:// URL"],
      [WorkSettings.signingKeyJwk, "{\"kty\":\"OKP\"}", "not a private Ed25519 JWK"],
      [NodeSettings.limits[0]!.setting, "-1", "'-1' is not a positive number"]
    ]
    for (const [setting, text, why] of cases) {
      const refused = setting.readAny(text)
      expect(Either.isLeft(refused), `${setting.name} ${text}`).toBe(true)
      if (Either.isLeft(refused)) expect(refused.left, `${setting.name} ${text}`).toContain(why)
    }
    // The password of a database URL is never shown, even when it is read.
    expect(Either.map(StoreSettings.database.readAny("postgres://app:s3cret@db/app"), (v) => v.shown)).toEqual(
      Either.right("postgres://app:…@db/app")
    )
  })
})

describe("where a setting comes from", () => {
  const settings = Catalog.serve
  const resolved = (s: Resolve.Sources) => Either.getOrThrow(Resolve.resolve(settings, "serve", s))
  const file = { path: "/etc/appexec.json", values: { lease: "3m", "max-attempts": "7", retention: "9d" } }

  it("a flag wins over its variable, a variable over the file, the file over the default", () => {
    const all = resolved(sources({ lease: "1m" }, { APPEXEC_LEASE: "2m", APPEXEC_MAX_ATTEMPTS: "5" }, file))
    expect(all.get(WorkSettings.lease)).toEqual(Duration.minutes(1))
    expect(all.get(WorkSettings.maxAttempts)).toBe(5)
    expect(all.get(WorkSettings.retention)).toEqual(Duration.days(9))
    expect(all.get(WorkSettings.webhookTimeout)).toEqual(AppexecConfig.defaults.webhookTimeout)
    const sourceOf = (name: string) => all.entries.find((e) => e.setting.name === name)!.source
    expect(Resolve.describeSource(sourceOf("lease"))).toBe("flag")
    expect(Resolve.describeSource(sourceOf("max-attempts"))).toBe("variable APPEXEC_MAX_ATTEMPTS")
    expect(Resolve.describeSource(sourceOf("retention"))).toBe("file /etc/appexec.json")
    expect(Resolve.describeSource(sourceOf("webhook-timeout"))).toBe("default")
    // An empty variable is no variable.
    expect(resolved(sources({}, { APPEXEC_LEASE: " " }, file)).get(WorkSettings.lease)).toEqual(Duration.minutes(3))
  })

  it("a bad value is refused naming where it came from; every one is said", () => {
    const refused = Resolve.resolve(
      settings,
      "serve",
      sources({ lease: "soon" }, { APPEXEC_MAX_ATTEMPTS: "0" }, { path: "/etc/a.json", values: { port: "x" } })
    )
    expect(refused).toEqual(Either.left(
      [
        "port (in /etc/a.json): 'x' is not a port (0 to 65535)",
        "--lease: 'soon' is not a duration above zero (a whole number and ms, s, m, h or d, such as 30s or 7d)",
        "APPEXEC_MAX_ATTEMPTS: '0' is not a positive number"
      ].join("\n")
    ))
  })

  it("a flag a process would not use is refused, naming who uses it; a variable or key of the file is left aside", () => {
    expect(Resolve.resolve(settings, "api", sources({ retention: "90d" }))).toEqual(Either.left(
      "--retention would do nothing in appexec serve --no-worker: it applies where executions run and webhooks go " +
        "out (appexec worker, and appexec serve without --no-worker) (or run appexec prune --retention where you like)"
    ))
    const api = Either.getOrThrow(Resolve.resolve(settings, "api", sources({}, { APPEXEC_RETENTION: "90d" }, file)))
    expect(api.get(WorkSettings.retention)).toEqual(AppexecConfig.defaults.retention)
    expect(api.get(WorkSettings.lease)).toEqual(Duration.minutes(3))
    const aside = api.entries.filter((e) => !e.used).map((e) => [e.setting.name, e.shown, e.source._tag])
    expect(aside).toEqual([["max-attempts", "7", "file"], ["retention", "90d", "variable"]])
  })
})

describe("--no-migrate", () => {
  const database = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
    Effect.flatMap(parse(AdminCommands.store, args, env), Database.fromSettings)

  it.effect("by its flag, or APPEXEC_MIGRATE=false (its variable says the opposite); on either database", () =>
    Effect.gen(function*() {
      // Opening migrates unless told not to.
      expect((yield* database([])).migrate).toBe(true)
      expect((yield* database(["--no-migrate"])).migrate).toBe(false)
      expect((yield* database([], { APPEXEC_MIGRATE: "false" })).migrate).toBe(false)
      expect((yield* database([], { APPEXEC_MIGRATE: "true" })).migrate).toBe(true)
      const postgres = yield* database(["--database", "postgres://u@h/db", "--no-migrate"])
      expect(Option.map(postgres.postgres, (pg) => pg.migrate)).toEqual(Option.some(false))
      expect(yield* refusal(AdminCommands.store, [], { APPEXEC_MIGRATE: "maybe" })).toContain(
        "APPEXEC_MIGRATE: 'maybe' is neither true nor false"
      )
    }))

  it("in the config file under its flag's name; the flag wins over the variable", () => {
    const noMigrate = (s: Resolve.Sources) =>
      Either.getOrThrow(Resolve.resolve(Catalog.store, "admin", s)).get(StoreSettings.noMigrate)
    expect(noMigrate(sources({}, {}, { path: "/etc/appexec.json", values: { "no-migrate": "true" } }))).toBe(true)
    expect(noMigrate(sources({ "no-migrate": "true" }, { APPEXEC_MIGRATE: "true" }))).toBe(true)
    expect(noMigrate(sources({}, { APPEXEC_MIGRATE: "false" }))).toBe(true)
  })
})

describe("usage errors", () => {
  it.effect("a bare --trust-proxy says it wants a number, not that the next flag is not an integer", () =>
    Effect.gen(function*() {
      const message = yield* refusal(ServeCommand.settings, ["--trust-proxy", "--public-url", "http://x"])
      expect(message).toContain("--trust-proxy: give the number of proxies you trust, as in --trust-proxy 1")
      expect(message).not.toContain("is not a integer")
      expect((yield* parse(ServeCommand.settings, ["--trust-proxy", "2"])).get(ApiSettings.trustProxy)).toBe(2)
      expect(yield* refusal(ServeCommand.settings, [], { APPEXEC_TRUST_PROXY: "yes" })).toContain(
        "APPEXEC_TRUST_PROXY: give the number of proxies you trust"
      )
    }))

  it.effect("--max-upload reads bytes or KiB, MiB, GiB, by flag and by variable", () =>
    Effect.gen(function*() {
      const maxUpload = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
        Effect.map(parse(ServeCommand.settings, args, env), (s) => s.get(ApiSettings.maxUpload))
      expect(yield* maxUpload([])).toBe(25 * 1024 * 1024)
      expect(yield* maxUpload(["--max-upload", "1048576"])).toBe(1024 * 1024)
      expect(yield* maxUpload(["--max-upload", "512KiB"])).toBe(512 * 1024)
      expect(yield* maxUpload(["--max-upload", "2gib"])).toBe(2 * 1024 ** 3)
      expect(yield* maxUpload([], { APPEXEC_MAX_UPLOAD: "100MiB" })).toBe(100 * 1024 * 1024)
      for (const text of ["0", "25MB", "1.5MiB", "-1", "lots"]) {
        expect(yield* refusal(ServeCommand.settings, ["--max-upload", text]), text).toContain(
          `--max-upload: '${text}' is not a size above zero (bytes, or a whole number of KiB, MiB or GiB`
        )
      }
    }))
})
