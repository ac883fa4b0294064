/**
 * Every setting of docs/cli.md's tables, in every role (docs/cli.md#settings): `serve`,
 * `serve --no-worker`, `worker` and an admin command each either honour it — given as a flag,
 * the options the process starts with differ from those without it — or refuse it with a message
 * naming the process that needs it. A flag a process accepts always has its effect.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { generateKeyPairSync } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Cli from "../src/Cli.js"
import * as AdminCommands from "../src/commands/AdminCommands.js"
import * as ServeCommand from "../src/commands/ServeCommand.js"
import * as WorkerCommand from "../src/commands/WorkerCommand.js"
import * as Catalog from "../src/settings/Catalog.js"
import * as Setting from "../src/settings/Setting.js"
import * as WorkSettings from "../src/settings/WorkSettings.js"
import { parse, refusal } from "./support/Settings.js"

const dir = mkdtempSync(join(tmpdir(), "appexec-roles-"))
const caFile = join(dir, "ca.pem")
writeFileSync(caFile, "-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n")
const configFile = join(dir, "appexec.json")
writeFileSync(configFile, JSON.stringify({ "rate-limit": 7, lease: "7m", "media-max-bytes": 7 }))
const jwk = JSON.stringify(generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" }))

/** A value of each setting that is not its default, and the flags it needs beside it to have an effect. */
const sample = (
  setting: Setting.Any
): { readonly args: ReadonlyArray<string>; readonly with?: ReadonlyArray<string> } => {
  const bucket = ["--media", "s3://bucket-x/p"]
  const database = ["--database", "postgres://u@db.internal/app"]
  const named: Record<string, { args: ReadonlyArray<string>; with?: ReadonlyArray<string> }> = {
    config: { args: [configFile] },
    database: { args: ["postgres://u@db.internal/app"] },
    "database-ca": { args: [caFile], with: database },
    "database-pool-size": { args: ["7"], with: database },
    "database-statement-timeout": { args: ["7m"], with: database },
    "media-endpoint": { args: ["http://minio.internal:9000"], with: bucket },
    "media-direct": { args: [], with: bucket },
    media: { args: ["s3://bucket-x/p"] },
    "signing-key-jwk": { args: [jwk] },
    ffmpeg: { args: ["/opt/ffmpeg"] },
    "comfyui-auth-secret": { args: ["COMFYUI_AUTH"] }
  }
  if (named[setting.name] !== undefined) return named[setting.name]!
  const byPseudo: Record<string, ReadonlyArray<string>> = {
    "": [],
    DURATION: ["7m"],
    N: ["7"],
    SIZE: ["7KiB"],
    LIST: ["7s,8s"],
    URL: ["http://example.test"],
    ADDR: ["0.0.0.0"],
    DIR: [join(dir, "elsewhere")],
    NAMES: ["ops.internal"],
    NAME: ["worker-7"],
    HOSTS: ["10.0.0.5:8080"],
    URLS: ["http://gpu-1.internal:8188,http://gpu-2.internal:8188"],
    PATTERNS: ["video.*,image.*"]
  }
  return { args: byPseudo[setting.pseudo]! }
}

/** The options `serve` would start with from `args` (`--no-worker` among them for the API role). */
const serveOptions = (args: ReadonlyArray<string>) =>
  Effect.flatMap(parse(ServeCommand.settings, args), ServeCommand.optionsOf)

const workerOptions = (args: ReadonlyArray<string>) =>
  Effect.flatMap(parse(WorkerCommand.settings, args), WorkerCommand.optionsOf)

const adminSettings = (args: ReadonlyArray<string>) =>
  Effect.map(parse(AdminCommands.store, args), (resolved) => resolved.entries.map((e) => [e.setting.name, e.shown]))

describe("each setting, in each role, is honoured or refused", () => {
  it("every setting is a row of docs/cli.md's tables (SettingsDocs)", () => {
    expect(Catalog.all.length).toBeGreaterThanOrEqual(50)
  })

  for (const setting of Catalog.all) {
    it.effect(`--${setting.name}`, () =>
      Effect.gen(function*() {
        const { args, with: beside = [] } = sample(setting)
        const flag = [`--${setting.name}`, ...args]
        // serve: every setting of the API or of the work.
        expect(Setting.usedBy(setting, "serve"), "serve takes every setting").toBe(true)
        expect(yield* serveOptions([...beside, ...flag]), "serve").not.toEqual(yield* serveOptions(beside))

        // serve --no-worker: the API's settings only.
        const api = ["--no-worker", ...beside]
        if (setting.name === "no-worker") {
          expect((yield* serveOptions(flag)).worker).toBe(false)
        } else if (Setting.usedBy(setting, "api")) {
          expect(yield* serveOptions([...api, ...flag]), "serve --no-worker").not.toEqual(yield* serveOptions(api))
        } else {
          expect(yield* refusal(ServeCommand.settings, [...api, ...flag])).toBe(
            Setting.refusal(setting, "appexec serve --no-worker")
          )
          expect(yield* refusal(ServeCommand.settings, [...api, ...flag])).toContain("appexec worker")
        }

        // worker: the work's settings; any other is refused before the command parses.
        if (Setting.usedBy(setting, "worker")) {
          expect(Cli.misplaced(["worker", ...flag])).toBeUndefined()
          expect(yield* workerOptions([...beside, ...flag]), "worker").not.toEqual(yield* workerOptions(beside))
        } else {
          expect(Cli.misplaced(["worker", ...flag])).toBe(Setting.refusal(setting, "appexec worker"))
          expect(Cli.misplaced(["worker", ...flag])).toContain("appexec serve")
        }

        // An admin command: where the state is; any other setting is refused, naming who uses it.
        const words = ["keys", "list"]
        if (Catalog.store.includes(setting)) {
          expect(Cli.misplaced([...words, ...flag])).toBeUndefined()
          expect(yield* adminSettings([...beside, ...flag])).not.toEqual(yield* adminSettings(beside))
        } else {
          expect(Cli.misplaced([...words, ...flag])).toBe(Setting.refusal(setting, "appexec keys list"))
        }
      }))
  }

  it("prune takes the retention and the bucket, signing-key rotate the grace; neither takes the others", () => {
    expect(Cli.misplaced(["prune", "--retention", "0ms", "--media", "s3://bucket-x/p"])).toBeUndefined()
    expect(Cli.misplaced(["prune", "--lease", "1m"])).toContain("--lease would do nothing in appexec prune")
    expect(Cli.misplaced(["signing-key", "rotate", "--retention", "1d"])).toContain(
      "--retention would do nothing in appexec signing-key rotate"
    )
    expect(Cli.misplaced(["run", "Greeting", "--lease", "1m"])).toBeUndefined()
  })

  it("media migrate takes the bucket (as --to) and its endpoint; the other media commands where the state is only", () => {
    expect(Cli.misplaced(["media", "migrate", "--to", "s3://bucket-x/p", "--media-endpoint", "http://minio:9000"]))
      .toBeUndefined()
    expect(Cli.misplaced(["media", "migrate", "--lease", "1m"])).toBe(
      Setting.refusal(WorkSettings.lease, "appexec media migrate")
    )
    expect(Cli.misplaced(["media", "sweep", "--media-endpoint", "http://minio:9000"])).toContain(
      "--media-endpoint would do nothing in appexec media sweep"
    )
    expect(Cli.misplaced(["media", "stores", "--data", dir])).toBeUndefined()
  })
})

afterAll(() => rmSync(dir, { recursive: true, force: true }))
