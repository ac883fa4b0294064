/**
 * The config file (docs/cli.md#the-config-file): `--config FILE` or `APPEXEC_CONFIG`, JSON (or
 * YAML), every setting under its flag's name; flags over variables over the file; a key that is
 * no setting refused with the closest names; and `config check`'s lines: each setting with where
 * it came from, secrets masked, what the role leaves aside marked.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ConfigCommand from "../src/commands/ConfigCommand.js"
import * as ServeCommand from "../src/commands/ServeCommand.js"
import * as WorkerCommand from "../src/commands/WorkerCommand.js"
import * as Catalog from "../src/settings/Catalog.js"
import * as ConfigFile from "../src/settings/ConfigFile.js"
import * as Resolve from "../src/settings/Resolve.js"
import * as SharedSettings from "../src/settings/SharedSettings.js"
import * as WorkSettings from "../src/settings/WorkSettings.js"
import { parse, refusal, sources } from "./support/Settings.js"

/** A temp directory with `files` in it, removed with the scope. */
const withFiles = (files: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = mkdtempSync(join(tmpdir(), "appexec-config-"))
      for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
      return dir
    }),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/** A private Ed25519 JWK (RFC 8037 test vector's seed). */
const JWK = { kty: "OKP", crv: "Ed25519", d: "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A" }

describe("the config file", () => {
  it("reads JSON values as the flags' texts: strings, numbers, booleans, lists, objects", () => {
    const read = ConfigFile.parse(
      "/etc/appexec.json",
      JSON.stringify({
        lease: "1m",
        "max-attempts": 5,
        "allow-private-networks": true,
        "webhook-retry-delays": ["1s", "1m"],
        "signing-key-jwk": JWK,
        "public-url": null
      }),
      Catalog.names
    )
    expect(Either.map(read, (file) => Object.fromEntries(file.values))).toEqual(Either.right({
      lease: "1m",
      "max-attempts": "5",
      "allow-private-networks": "true",
      "webhook-retry-delays": "1s,1m",
      "signing-key-jwk": JSON.stringify(JWK),
      "public-url": ""
    }))
  })

  it("refuses a key that is no setting, naming the closest; another config; what is not a JSON object", () => {
    const refused = (text: string) => Either.flip(ConfigFile.parse("/etc/a.json", text, Catalog.names))
    expect(refused(JSON.stringify({ leese: "1m" }))).toEqual(Either.right(
      "/etc/a.json: 'leese' is not a setting; did you mean 'lease'? (settings are named as their flags, without " +
        "the dashes: docs/cli.md#settings)"
    ))
    expect(refused(JSON.stringify({ maxAttempts: 3 }))).toEqual(Either.right(
      "/etc/a.json: 'maxAttempts' is not a setting; did you mean 'max-attempts'? (settings are named as their " +
        "flags, without the dashes: docs/cli.md#settings)"
    ))
    expect(Either.getOrThrow(refused(JSON.stringify({ zzzzzzzz: 1 })))).not.toContain("did you mean")
    expect(refused(JSON.stringify({ config: "other.json" }))).toEqual(
      Either.right("/etc/a.json: a config file cannot name another ('config')")
    )
    expect(Either.getOrThrow(refused("{ lease: 1m }"))).toMatch(/^\/etc\/a\.json: not JSON \(/)
    expect(refused("[1, 2]")).toEqual(
      Either.right("/etc/a.json: not a JSON object of settings ({\"lease\": \"1m\", …})")
    )
  })

  it.scoped("--config and APPEXEC_CONFIG: flags over variables over the file, JSON or YAML", () =>
    Effect.gen(function*() {
      const dir = yield* withFiles({
        "appexec.json": JSON.stringify({
          lease: "3m",
          "max-attempts": 7,
          retention: "9d",
          "allow-hosts": ["a.internal"]
        }),
        "appexec.yaml": "lease: 4m\nallow-private-networks: true\nwebhook-retry-delays:\n  - 1s\n  - 2s\n"
      })
      const json = join(dir, "appexec.json")
      const serve = yield* parse(ServeCommand.settings, ["--config", json, "--lease", "1m"], {
        APPEXEC_MAX_ATTEMPTS: "5"
      })
      expect(serve.get(WorkSettings.lease)).toEqual(Duration.minutes(1))
      expect(serve.get(WorkSettings.maxAttempts)).toBe(5)
      expect(serve.get(WorkSettings.retention)).toEqual(Duration.days(9))
      expect(serve.get(SharedSettings.allowHosts)).toEqual([{ host: "a.internal", port: undefined }])
      // The variable names the file just as well.
      const worker = yield* parse(WorkerCommand.settings, [], { APPEXEC_CONFIG: json })
      expect(worker.get(WorkSettings.retention)).toEqual(Duration.days(9))
      const yaml = yield* parse(WorkerCommand.settings, ["--config", join(dir, "appexec.yaml")])
      expect(yaml.get(WorkSettings.lease)).toEqual(Duration.minutes(4))
      expect(yaml.get(SharedSettings.allowPrivateNetworks)).toBe(true)
      expect(yaml.get(WorkSettings.webhookRetryDelays)).toEqual([Duration.seconds(1), Duration.seconds(2)])
    }))

  it.scoped("a bad file stops the command before anything starts, saying why", () =>
    Effect.gen(function*() {
      const dir = yield* withFiles({ "bad.json": JSON.stringify({ "max-atempts": 3 }) })
      expect(yield* refusal(WorkerCommand.settings, ["--config", join(dir, "bad.json")])).toContain(
        "'max-atempts' is not a setting; did you mean 'max-attempts'?"
      )
      expect(yield* refusal(WorkerCommand.settings, ["--config", join(dir, "missing.json")])).toContain(
        "the config file cannot be read"
      )
      const wrong = yield* withFiles({ "wrong.json": JSON.stringify({ lease: "soon" }) })
      expect(yield* refusal(WorkerCommand.settings, [], { APPEXEC_CONFIG: join(wrong, "wrong.json") })).toContain(
        `lease (in ${join(wrong, "wrong.json")}): 'soon' is not a duration above zero`
      )
    }))
})

describe("config check's lines", () => {
  it("each setting, its value and where it came from; secrets hidden; what the role leaves aside marked", () => {
    const resolved = Either.getOrThrow(Resolve.resolve(
      Catalog.serve,
      "api",
      sources(
        { lease: "1m", "signing-key-jwk": JSON.stringify(JWK) },
        { APPEXEC_DATABASE_URL: "postgres://app:s3cret@db.internal/app", APPEXEC_RETENTION: "90d" },
        { path: "/etc/appexec.json", values: { "allow-hosts": "hooks.internal:8443" } }
      )
    ))
    const lines = ConfigCommand.linesOf(resolved, {
      APPEXEC_MASTER_KEY: "k".repeat(43),
      APPEXEC_SECRET_PROVIDER_TOKEN: "tok-123"
    })
    const text = lines.join("\n")
    expect(lines).toContain("lease\t1m\tflag")
    expect(lines).toContain("signing-key-jwk\t(set, hidden)\tflag")
    expect(lines).toContain("database\tpostgres://app:…@db.internal/app\tvariable APPEXEC_DATABASE_URL")
    expect(lines).toContain("allow-hosts\thooks.internal:8443\tfile /etc/appexec.json")
    expect(lines).toContain("no-worker\ton\t--role api")
    expect(lines).toContain("rate-limit\t100\tdefault")
    expect(lines).toContain("retention\t90d\tvariable APPEXEC_RETENTION (not used by appexec serve --no-worker)")
    expect(lines).toContain("master-key\t(set, hidden)\tvariable APPEXEC_MASTER_KEY")
    expect(lines).toContain("secret provider_token\t(set, hidden)\tvariable APPEXEC_SECRET_PROVIDER_TOKEN")
    expect(text).not.toContain("s3cret")
    expect(text).not.toContain(JWK.d)
    expect(text).not.toContain("tok-123")
    expect(text).not.toContain("kkkk")
    // The API does not use the work's settings: they are not listed as in force.
    expect(lines.some((line) => line.startsWith("max-attempts\t"))).toBe(false)
  })
})
