/**
 * Processes started together on an empty database bootstrap it once, on SQLite and on
 * PostgreSQL: three `serve` at once make the example apps once each, one `default` key (printed
 * by one process; the others print how to get a key) and one signing key that signs.
 */
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { readdirSync } from "node:fs"
import { join } from "node:path"
import { defaultAppsDir } from "../src/Bootstrap.js"
import { type Backend, backends, query } from "./support/Backends.js"
import { spawnServe, tempDataDir } from "./support/ServeProcess.js"

const PROCESSES = 3

/** The names of the public apps, and how many signing keys are not retired. */
const bootstrapped = (backend: Backend, data: string, env: Record<string, string>) =>
  backend.name === "sqlite"
    ? Effect.sync(() => {
      const db = new Database(join(data, "appexec.db"), { readonly: true })
      try {
        return {
          apps: db.prepare("SELECT name FROM apps WHERE is_public = 1 ORDER BY name").pluck().all() as Array<string>,
          signing: db.prepare("SELECT count(*) FROM signing_keys WHERE retired_at IS NULL").pluck().get() as number,
          workspaces: db.prepare("SELECT count(*) FROM workspaces WHERE name = 'default'").pluck().get() as number,
          keys: db.prepare("SELECT count(*) FROM api_keys").pluck().get() as number
        }
      } finally {
        db.close()
      }
    })
    : Effect.gen(function*() {
      const count = (sql: string) => Effect.map(query<{ n: number }>(env, sql), (rows) => Number(rows[0]!.n))
      return {
        apps: (yield* query<{ name: string }>(env, "SELECT name FROM apps WHERE is_public ORDER BY name")).map((r) =>
          r.name
        ),
        signing: yield* count("SELECT count(*) AS n FROM signing_keys WHERE retired_at IS NULL"),
        workspaces: yield* count("SELECT count(*) AS n FROM workspaces WHERE name = 'default'"),
        keys: yield* count("SELECT count(*) AS n FROM api_keys")
      }
    })

for (const backend of backends) {
  describe(`first start of several processes at once (${backend.name})`, () => {
    it.scoped(
      `${PROCESSES} serve started together bootstrap once: apps, the default key and the signing key`,
      () =>
        Effect.gen(function*() {
          const data = yield* tempDataDir
          const env = yield* backend.env
          const serves = yield* Effect.forEach(
            Array.from({ length: PROCESSES }),
            () => spawnServe(data, ["--no-console"], env),
            { concurrency: "unbounded" }
          )
          yield* Effect.forEach(
            serves,
            // The key on stdout, or the log line that says how to make one.
            (serve) =>
              Effect.race(
                serve.waitFor(/API key of workspace "default"/, "stdout", "60 seconds"),
                serve.waitFor(/Create an API key with: appexec keys create/, "stderr", "60 seconds")
              ),
            { concurrency: "unbounded" }
          )
          const printedKeys = serves.filter((s) => s.output.stdout.includes("API key of workspace \"default\""))
          expect(printedKeys).toHaveLength(1)
          const told = serves.filter((s) =>
            /Create an API key with: appexec keys create --workspace default/.test(s.output.stderr)
          )
          expect(told).toHaveLength(PROCESSES - 1)
          const examples = readdirSync(defaultAppsDir).filter((f) => f.endsWith(".json")).length
          const state = yield* bootstrapped(backend, data, env)
          expect(state.apps).toHaveLength(examples)
          expect(new Set(state.apps).size).toBe(examples)
          expect(state).toMatchObject({ signing: 1, workspaces: 1, keys: 1 })
        }),
      90_000
    )
  })
}
