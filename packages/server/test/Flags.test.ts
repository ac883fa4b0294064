/**
 * The command's flags, parsed in this process: every duration goes through core's one parser
 * (`AppexecConfig.parseDuration`), flag and variable alike; every default of docs/cli.md's flag
 * tables is what the command uses when the flag is not given, and the engine's defaults are
 * `AppexecConfig.defaults`; a bare `--trust-proxy` says what it wants.
 */
import { AppexecConfig } from "@appexec/core"
import { RateLimit } from "@appexec/http"
import { NodeListener } from "@appexec/platform-node"
import { CliConfig, HelpDoc, Options } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Either, FastCheck as fc, Option } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as Flags from "../src/internal/Flags.js"
import * as SharedFlags from "../src/internal/SharedFlags.js"
import * as ServeCommand from "../src/ServeCommand.js"
import * as WorkerCommand from "../src/WorkerCommand.js"

const docs = readFileSync(fileURLToPath(new URL("../../../docs/cli.md", import.meta.url)), "utf8")

/** What `options` parses from `args`, with only `env` as the environment. */
const parse = <A>(options: Options.Options<A>, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Options.processCommandLine(options, args, CliConfig.defaultConfig).pipe(
    Effect.map(([, , value]) => value),
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.provide(NodeContext.layer)
  )

/** Why `options` refused `args`, as the operator reads it. */
const refusal = <A>(options: Options.Options<A>, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  parse(options, args, env).pipe(
    Effect.flip,
    Effect.map((error) => ("error" in error ? HelpDoc.toAnsiText(error.error).trim() : String(error)))
  )

const serveFlags = Options.all(ServeCommand.flags)
const workerFlags = Options.all(WorkerCommand.flags)

/** The value a default cell of the docs names (`` `30s` ``, `100`, `127.0.0.1`), or undefined for prose. */
const valueOf = (cell: string) =>
  /^`([^`]*)`$/.exec(cell)?.[1] ?? (/^[^\s`]+$/.test(cell) && !/^(off|none)$/.test(cell) ? cell : undefined)

/** `--max-connections-per-ip` → `maxConnectionsPerIp`: the key a command's handler reads the flag by. */
const keyOf = (flag: string) => flag.replace(/^--/, "").replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())

/** The rows of the flag table under `heading`: each flag with its variable and documented default. */
const tableRows = (heading: string) => {
  const section = docs.slice(docs.indexOf(heading))
  const table = section.slice(section.indexOf("| Flag |")).split("\n\n")[0]!.split("\n").slice(2)
  return table.flatMap((line) => {
    const [flags, variables, fallback] = line.split(/(?<!\\)\|/).slice(1, 4).map((cell) => cell.trim())
    const names = [...flags!.matchAll(/`(--[a-z-]+)[^`]*`/g)].map((m) => m[1]!)
    const vars = [...variables!.matchAll(/`(APPEXEC_[A-Z_]+)`/g)].map((m) => m[1]!)
    const defaults = fallback!.split(", ")
    return names.map((name, i) => ({
      name,
      variable: vars[i],
      fallback: names.length === defaults.length ? defaults[i]! : fallback!
    }))
  })
}

describe("the duration parser (core's AppexecConfig.parseDuration)", () => {
  it("reads a whole number and ms, s, m, h or d", () => {
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
  })

  it("refuses anything else", () => {
    for (const text of ["", "5", "s", "1.5s", "-1s", "+1s", "5 s", "5sec", "5S", "5x", "30 seconds", "1e3ms", "5s,"]) {
      expect(AppexecConfig.parseDuration(text), text).toEqual(Option.none())
    }
  })

  it("reads lists: 5s,30s,2m; an empty text is no duration; one bad item refuses the list", () => {
    expect(Option.map(AppexecConfig.parseDurations("5s,30s,2m"), (l) => l.map(Duration.toMillis))).toEqual(
      Option.some([5_000, 30_000, 120_000])
    )
    expect(AppexecConfig.parseDurations("")).toEqual(Option.some([]))
    expect(Option.map(AppexecConfig.parseDurations(" 1s , 2s "), (l) => l.length)).toEqual(Option.some(2))
    expect(AppexecConfig.parseDurations("5s,soon")).toEqual(Option.none())
  })

  it("reads back what help shows", () => {
    fc.assert(fc.property(fc.nat({ max: 1e12 }), (ms) => {
      const shown = Flags.showDuration(Duration.millis(ms))
      expect(Option.map(AppexecConfig.parseDuration(shown), Duration.toMillis)).toEqual(Option.some(ms))
    }))
    expect(AppexecConfig.defaults.webhookRetryDelays.map(Flags.showDuration)).toEqual(["5s", "30s", "2m"])
  })

  it.effect("every duration flag and its variable read the same forms through it", () =>
    Effect.gen(function*() {
      const lease = SharedFlags.claims.lease
      expect(yield* parse(lease, ["--lease", "2m"])).toEqual(Duration.minutes(2))
      expect(yield* parse(lease, [], { APPEXEC_LEASE: "2m" })).toEqual(Duration.minutes(2))
      expect(yield* refusal(lease, ["--lease", "0s"])).toContain("--lease: '0s' is not a duration above zero")
      expect(yield* refusal(lease, [], { APPEXEC_LEASE: "2 minutes" })).toContain("'2 minutes' is not a duration")
      expect(yield* parse(SharedFlags.grace("grace"), ["--grace", "12h"])).toEqual(Duration.hours(12))
      expect(yield* parse(SharedFlags.grace("grace"), ["--grace", "0s"])).toEqual(Duration.zero)
      expect(yield* refusal(SharedFlags.grace("grace"), ["--grace", "soon"])).toContain(
        "--grace: 'soon' is not a duration"
      )
      expect(yield* parse(SharedFlags.webhookRetryDelays, [], { APPEXEC_WEBHOOK_RETRY_DELAYS: "1s,1h" })).toEqual([
        Duration.seconds(1),
        Duration.hours(1)
      ])
      expect(yield* refusal(SharedFlags.webhookRetryDelays, ["--webhook-retry-delays", "5s,x"])).toContain(
        "is not a list of durations such as 5s,30s,2m"
      )
      const database = yield* parse(SharedFlags.database, [
        "--database",
        "postgres://u@h/db",
        "--database-statement-timeout",
        "1h"
      ])
      expect(Option.map(database.postgres, (pg) => pg.statementTimeout)).toEqual(Option.some(Duration.hours(1)))
      // Opening migrates unless told not to, by the flag or the variable; on either database.
      expect(database.migrate).toBe(true)
      expect((yield* parse(SharedFlags.database, ["--no-migrate"])).migrate).toBe(false)
      expect((yield* parse(SharedFlags.database, [], { APPEXEC_MIGRATE: "false" })).migrate).toBe(false)
      expect((yield* parse(SharedFlags.database, [], { APPEXEC_MIGRATE: "true" })).migrate).toBe(true)
      const noMigrate = yield* parse(SharedFlags.database, ["--database", "postgres://u@h/db", "--no-migrate"])
      expect(Option.map(noMigrate.postgres, (pg) => pg.migrate)).toEqual(Option.some(false))
      expect(
        yield* refusal(SharedFlags.database, [], {
          APPEXEC_DATABASE_URL: "postgres://u@h/db",
          APPEXEC_DATABASE_STATEMENT_TIMEOUT: "0ms"
        })
      ).toContain("--database-statement-timeout: '0ms' is not a duration above zero")
    }))
})

describe("the defaults", () => {
  it.effect("serve's and worker's are the engine's (AppexecConfig.defaults) and the listener's", () =>
    Effect.gen(function*() {
      const engine = AppexecConfig.defaults
      const serve = yield* parse(serveFlags, [])
      expect(serve.lease).toEqual(Duration.decode(engine.lease))
      expect(serve.maxAttempts).toBe(engine.maxAttempts)
      expect(serve.webhookTimeout).toEqual(Duration.decode(engine.webhookTimeout))
      expect(serve.webhookClaimMargin).toEqual(Duration.decode(engine.webhookClaimMargin))
      expect(serve.webhookRetryDelays).toEqual(engine.webhookRetryDelays.map((d) => Duration.decode(d)))
      expect(serve.signingKeyGrace).toEqual(Duration.decode(engine.signingKeyGrace))
      expect(serve.retention).toEqual(Duration.decode(engine.retention))
      expect(serve.maxRunningPerWorkspace).toEqual(Option.none())
      expect(serve.rateLimit).toBe(RateLimit.defaults.limit)
      expect(serve.trustProxy).toBe(RateLimit.defaults.trustProxy)
      const connections = NodeListener.connectionDefaults
      expect(serve.maxConnections).toBe(connections.maxConnections)
      expect(serve.maxConnectionsPerIp).toBe(connections.maxConnectionsPerIp)
      expect(serve.headersTimeout).toEqual(connections.headersTimeout)
      expect(serve.requestTimeout).toEqual(connections.requestTimeout)
      expect(serve.keepAliveTimeout).toEqual(connections.keepAliveTimeout)
      const worker = yield* parse(workerFlags, [])
      expect(worker.concurrency).toBe(engine.workerConcurrency)
      expect(worker.lease).toEqual(serve.lease)
      expect(yield* parse(SharedFlags.retention("prune"), [])).toEqual(Duration.decode(engine.retention))
    }))

  it.effect("each documented default of serve's flag table is what serve uses, by flag and by variable", () =>
    Effect.gen(function*() {
      const rows = tableRows("## `appexec serve`")
      expect(rows.length).toBeGreaterThanOrEqual(25)
      const none = yield* parse(serveFlags, [])
      const prose: Record<string, unknown> = {
        "--apps": ServeCommand.defaultAppsDir,
        "--public-url": Option.none()
      }
      for (const { fallback, name, variable } of rows) {
        const key = keyOf(name)
        expect(Object.keys(none), name).toContain(key)
        // `--database` gives the PostgreSQL settings, beside whether to migrate (`--no-migrate`).
        const actual: unknown = key === "database" ? none.database.postgres : Reflect.get(none, key)
        const value = valueOf(fallback)
        if (value !== undefined) {
          expect(yield* parse(serveFlags, [name, value]), `${name} ${value}`).toEqual(none)
          expect(yield* parse(serveFlags, [], { [variable!]: value }), `${variable}=${value}`).toEqual(none)
        } else if (/^(off|none|no cap)\b/.test(fallback)) {
          expect(actual, name).toEqual(typeof actual === "boolean" ? false : Option.none())
        } else {
          expect(name in prose, `${name}: '${fallback}' is neither a value nor known prose`).toBe(true)
          expect(actual, name).toEqual(prose[name])
        }
      }
    }))

  it.effect("each documented default of worker's flag table, and of prune and signing-key rotate", () =>
    Effect.gen(function*() {
      const none = yield* parse(workerFlags, [])
      const rows = tableRows("## `appexec worker`")
      for (const { fallback, name, variable } of rows.filter((r) => r.fallback !== "")) {
        const value = valueOf(fallback)
        if (name === "--public-url") expect(WorkerCommand.defaultPublicUrl).toBe(value)
        else if (value === undefined) expect(Reflect.get(none, keyOf(name)), name).toEqual(Option.none())
        else {
          expect(yield* parse(workerFlags, [name, value]), `${name} ${value}`).toEqual(none)
          expect(yield* parse(workerFlags, [], { [variable!]: value }), `${variable}=${value}`).toEqual(none)
        }
      }
      // The flags "as for serve" are serve's own.
      const shared = rows.filter((r) => r.fallback === "" && r.variable === undefined).map((r) => r.name)
      expect(shared).toContain("--webhook-retry-delays")
      for (const name of shared) {
        expect(Reflect.get(WorkerCommand.flags, keyOf(name)), name).toBe(Reflect.get(ServeCommand.flags, keyOf(name)))
      }
      const retention = /`appexec prune \[--retention (\w+)\]`/.exec(docs)?.[1]
      const grace = /`appexec signing-key rotate \[--grace (\w+)\]`/.exec(docs)?.[1]
      const prune = SharedFlags.retention("prune")
      expect(yield* parse(prune, ["--retention", retention!])).toEqual(yield* parse(prune, []))
      const rotate = SharedFlags.grace("grace")
      expect(yield* parse(rotate, ["--grace", grace!])).toEqual(yield* parse(rotate, []))
    }))
})

describe("usage errors", () => {
  it.effect("a bare --trust-proxy says it wants a number, not that the next flag is not an integer", () =>
    Effect.gen(function*() {
      const message = yield* refusal(serveFlags, ["--trust-proxy", "--public-url", "http://x"])
      expect(message).toContain("--trust-proxy: give the number of proxies you trust, as in --trust-proxy 1")
      expect(message).not.toContain("is not a integer")
      expect((yield* parse(serveFlags, ["--trust-proxy", "2"])).trustProxy).toBe(2)
      expect(Either.isLeft(yield* Effect.either(parse(serveFlags, [], { APPEXEC_TRUST_PROXY: "yes" })))).toBe(true)
    }))

  it.effect("--max-upload reads bytes or KiB, MiB, GiB, by flag and by variable; anything else says what it wants", () =>
    Effect.gen(function*() {
      const maxUpload = ServeCommand.flags.maxUpload
      expect(yield* parse(maxUpload, [])).toBe(25 * 1024 * 1024)
      expect(yield* parse(maxUpload, ["--max-upload", "1048576"])).toBe(1024 * 1024)
      expect(yield* parse(maxUpload, ["--max-upload", "512KiB"])).toBe(512 * 1024)
      expect(yield* parse(maxUpload, ["--max-upload", "2gib"])).toBe(2 * 1024 ** 3)
      expect(yield* parse(maxUpload, [], { APPEXEC_MAX_UPLOAD: "100MiB" })).toBe(100 * 1024 * 1024)
      for (const text of ["0", "25MB", "1.5MiB", "-1", "lots"]) {
        expect(yield* refusal(maxUpload, ["--max-upload", text]), text).toContain(
          `--max-upload: '${text}' is not a size above zero (bytes, or a whole number of KiB, MiB or GiB`
        )
      }
      expect([100, 1024, 512 * 1024, 25 * 1024 * 1024].map(Flags.showBytes)).toEqual(["100", "1KiB", "512KiB", "25MiB"])
    }))
})
