/**
 * Settings in real `appexec` processes (docs/cli.md#settings): a flag a process would not use is
 * refused before anything starts, naming the process that needs it; a bad config file likewise;
 * `config check` prints a role's settings with where each came from, secrets hidden; an admin
 * command never makes a master key that opens nothing (on SQLite beside a database it did not
 * make, on PostgreSQL at all, not even the data directory).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as TestDatabase from "../../postgres/test/support/TestDatabase.js"
import { bin } from "./support/Bin.js"
import { tempDataDir } from "./support/ServeProcess.js"

/** Runs `appexec …args` to its end in `cwd` with `env` added (and no master key unless given). */
const appexec = (args: ReadonlyArray<string>, env: Record<string, string> = {}, cwd?: string) => {
  const base = { ...process.env }
  for (const name of Object.keys(base)) if (name.startsWith("APPEXEC_")) delete base[name]
  const run = spawnSync(process.execPath, [bin, ...args], {
    env: { ...base, APPEXEC_LOG_FORMAT: "json", ...env },
    encoding: "utf8",
    timeout: 30_000,
    ...(cwd === undefined ? {} : { cwd })
  })
  return { code: run.status, stdout: run.stdout, stderr: run.stderr }
}

describe("settings in appexec processes", () => {
  it.scoped("a flag a process would not use, or a bad config file, stops it before anything starts", () =>
    Effect.gen(function*() {
      const dir = yield* tempDataDir
      const data = join(dir, "data")
      const api = appexec(["serve", "--no-worker", "--retention", "90d", "--data", data])
      expect(api.code).not.toBe(0)
      expect(api.stderr).toContain(
        "--retention would do nothing in appexec serve --no-worker: it applies where executions run and webhooks " +
          "go out (appexec worker, and appexec serve without --no-worker)"
      )
      // The same role from the variable: still refused, as a flag.
      expect(appexec(["serve", "--max-attempts", "5", "--data", data], { APPEXEC_NO_WORKER: "true" }).stderr)
        .toContain("--max-attempts would do nothing in appexec serve --no-worker")
      const worker = appexec(["worker", "--rate-limit", "500", "--data", data])
      expect(worker.code).not.toBe(0)
      expect(worker.stderr).toContain(
        "appexec: --rate-limit would do nothing in appexec worker: it applies to the HTTP API (appexec serve"
      )
      expect(appexec(["worker", "--host", "0.0.0.0", "--data", data]).stderr).toContain(
        "the admin port's address is --admin-host"
      )
      expect(appexec(["keys", "list", "--lease", "1m", "--data", data]).stderr).toContain(
        "--lease would do nothing in appexec keys list"
      )
      writeFileSync(join(dir, "bad.json"), JSON.stringify({ "webhook-retry-delay": "5s" }))
      const bad = appexec(["worker", "--config", join(dir, "bad.json"), "--data", data])
      expect(bad.code).not.toBe(0)
      expect(bad.stderr).toContain("'webhook-retry-delay' is not a setting; did you mean 'webhook-retry-delays'?")
      // Nothing was started: not even the data directory was made.
      expect(existsSync(data)).toBe(false)
    }))

  it.scoped("config check prints a role's settings, where each came from, secrets hidden", () =>
    Effect.gen(function*() {
      const dir = yield* tempDataDir
      const config = join(dir, "appexec.json")
      writeFileSync(
        config,
        JSON.stringify({
          "allow-hosts": ["hooks.internal:8443"],
          concurrency: 8,
          database: "postgres://appexec:s3cret@db.internal:5432/appexec",
          "signing-key-jwk": { kty: "OKP", crv: "Ed25519", d: "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A" }
        })
      )
      const key = randomBytes(32).toString("base64url")
      const check = appexec(["config", "check", "--role", "api", "--config", config, "--rate-limit", "500"], {
        APPEXEC_RETENTION: "90d",
        APPEXEC_MASTER_KEY: key,
        APPEXEC_SECRET_PROVIDER_TOKEN: "tok-secret-123"
      })
      expect(check.stderr).toBe("")
      expect(check.code).toBe(0)
      const lines = check.stdout.trim().split("\n")
      expect(lines).toContain("rate-limit\t500\tflag")
      expect(lines).toContain(`allow-hosts\thooks.internal:8443\tfile ${config}`)
      expect(lines).toContain(`database\tpostgres://appexec:…@db.internal:5432/appexec\tfile ${config}`)
      expect(lines).toContain(`signing-key-jwk\t(set, hidden)\tfile ${config}`)
      expect(lines).toContain("port\t8080\tdefault")
      expect(lines).toContain("retention\t90d\tvariable APPEXEC_RETENTION (not used by appexec serve --no-worker)")
      expect(lines).toContain(`concurrency\t8\tfile ${config} (not used by appexec serve --no-worker)`)
      expect(lines).toContain("master-key\t(set, hidden)\tvariable APPEXEC_MASTER_KEY")
      expect(lines).toContain("secret provider_token\t(set, hidden)\tvariable APPEXEC_SECRET_PROVIDER_TOKEN")
      for (const secret of ["s3cret", "nWGxne", key, "tok-secret-123"]) expect(check.stdout).not.toContain(secret)
      // What the process would refuse, config check refuses alike.
      const refused = appexec(["config", "check", "--role", "api", "--retention", "1d"])
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain("--retention would do nothing in appexec serve --no-worker")
    }))

  it.scoped("an admin command never makes a master key that opens nothing", () =>
    Effect.gen(function*() {
      const dir = yield* tempDataDir
      const data = join(dir, "data")
      const key = randomBytes(32).toString("base64url")
      // A database made with the key from the environment: no key file beside it.
      expect(appexec(["keys", "create", "--workspace", "acme", "--data", data], { APPEXEC_MASTER_KEY: key }).code)
        .toBe(0)
      expect(existsSync(join(data, "master.key"))).toBe(false)
      const without = appexec(["keys", "list", "--data", data])
      expect(without.code).not.toBe(0)
      expect(without.stderr).toContain("APPEXEC_MASTER_KEY")
      expect(without.stderr).toContain("it makes none")
      expect(existsSync(join(data, "master.key"))).toBe(false)
      expect(appexec(["keys", "list", "--data", data], { APPEXEC_MASTER_KEY: key }).stdout).toContain("acme")
      // On PostgreSQL, from a directory of its own: nothing written there, not even ./.appexec.
      const cwd = join(dir, "elsewhere")
      mkdirSync(cwd)
      const database = yield* Effect.promise(() => TestDatabase.create("adminkey"))
      const pg = appexec(["keys", "list"], { APPEXEC_DATABASE_URL: database }, cwd)
      expect(pg.code).not.toBe(0)
      expect(pg.stderr).toContain("APPEXEC_MASTER_KEY")
      expect(existsSync(join(cwd, ".appexec"))).toBe(false)
    }), 60_000)
})
