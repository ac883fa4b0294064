/**
 * `appexec migrate` and `--no-migrate`, as an operator runs them, on SQLite and on PostgreSQL:
 * `migrate` applies the migrations alone (no master key, no bootstrap) and says what it did;
 * a process told not to migrate refuses a database behind it, naming `appexec migrate`, and runs
 * once it was migrated; every command refuses, changing nothing, a database a newer appexec
 * migrated.
 */
import { PostgresMigrations } from "@appexec/postgres"
import { SqliteMigrations } from "@appexec/sqlite"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { type Backend, backends, query } from "./support/Backends.js"
import { appexecIn } from "./support/Command.js"
import { spawnServe, tempDataDir } from "./support/ServeProcess.js"

const migrationsOf = (backend: Backend) =>
  backend.name === "sqlite"
    ? { names: Object.keys(SqliteMigrations.migrations), latest: SqliteMigrations.latest }
    : { names: Object.keys(PostgresMigrations.migrations), latest: PostgresMigrations.latest }

/** The names recorded as applied, in order. */
const applied = (backend: Backend, data: string, env: Record<string, string>) =>
  backend.name === "sqlite"
    ? Effect.sync(() => {
      const db = new Database(join(data, "appexec.db"), { readonly: true })
      try {
        return db.prepare("SELECT name FROM appexec_migrations ORDER BY name").pluck().all() as Array<string>
      } finally {
        db.close()
      }
    })
    : Effect.map(
      query<{ name: string }>(env, "SELECT name FROM appexec_migrations ORDER BY name"),
      (rows) => rows.map((r) => r.name)
    )

/** Records a migration that this appexec does not know, as a newer appexec would have. */
const recordNewer = (backend: Backend, data: string, env: Record<string, string>, name: string) =>
  backend.name === "sqlite"
    ? Effect.sync(() => {
      const db = new Database(join(data, "appexec.db"))
      db.prepare("INSERT INTO appexec_migrations (name, timestamp) VALUES (?, ?)").run(name, new Date().toISOString())
      db.close()
    })
    : Effect.asVoid(query(env, "INSERT INTO appexec_migrations (name, timestamp) VALUES ($1, $2)", [
      name,
      new Date().toISOString()
    ]))

for (const backend of backends) {
  describe(`appexec migrate (${backend.name})`, () => {
    it.scoped(
      "applies every migration alone and says so, then finds the database up to date",
      () =>
        Effect.gen(function*() {
          const data = yield* tempDataDir
          const env = yield* backend.env
          // No master key given: `migrate` needs none, and writes none into the data directory.
          const { APPEXEC_MASTER_KEY: _, ...withoutKey } = env
          const appexec = appexecIn(withoutKey)
          const { latest, names } = migrationsOf(backend)
          const first = yield* appexec("migrate", "--data", data)
          expect(first.code, first.stderr).toBe(0)
          expect(first.stdout).toBe(
            `${names.map((n) => `applied ${n}\n`).join("")}the database is at migration ${latest}\n`
          )
          expect(yield* applied(backend, data, env)).toEqual(names)
          expect(existsSync(join(data, "master.key"))).toBe(false)
          const again = yield* appexec("migrate", "--data", data)
          expect(again.stdout).toBe(`the database is up to date (migration ${latest})\n`)
        }),
      60_000
    )

    it.scoped(
      "a process told not to migrate refuses a database behind it, naming appexec migrate; runs once it is migrated",
      () =>
        Effect.gen(function*() {
          const data = yield* tempDataDir
          const env = yield* backend.env
          const appexec = appexecIn(env)
          const refused = yield* appexec("serve", "--port", "0", "--data", data, "--no-migrate")
          expect(refused.code).not.toBe(0)
          expect(refused.stderr).toMatch(
            /the database has no appexec tables yet and this appexec needs \S+: run `appexec migrate`/
          )
          const byVariable = yield* appexecIn({ ...env, APPEXEC_MIGRATE: "false" })(
            "executions",
            "list",
            "--data",
            data
          )
          expect(byVariable.code).not.toBe(0)
          expect(byVariable.stderr).toMatch(/run `appexec migrate`/)
          // Nothing was applied meanwhile: `migrate` applies every migration.
          const migrated = yield* appexec("migrate", "--data", data)
          expect(migrated.stdout.split("\n").filter((line) => line.startsWith("applied "))).toHaveLength(
            migrationsOf(backend).names.length
          )
          const serve = yield* spawnServe(data, ["--no-migrate"], env)
          yield* serve.waitFor(/API key of workspace "default"/, "stdout")
        }),
      60_000
    )

    it.scoped(
      "every command refuses a database that a newer appexec migrated, and changes nothing",
      () =>
        Effect.gen(function*() {
          const data = yield* tempDataDir
          const env = yield* backend.env
          const appexec = appexecIn(env)
          expect((yield* appexec("migrate", "--data", data)).code).toBe(0)
          yield* recordNewer(backend, data, env, "9999_from_a_newer_appexec")
          const before = yield* applied(backend, data, env)
          const sentence =
            "this database was migrated by a newer appexec (migration 9999_from_a_newer_appexec); upgrade this process"
          for (const args of [["serve", "--port", "0"], ["worker"], ["executions", "list"], ["migrate"]]) {
            const refused = yield* appexec(...args, "--data", data)
            expect(refused.code, args.join(" ")).not.toBe(0)
            expect(refused.stderr, args.join(" ")).toContain(sentence)
            expect(refused.stderr).not.toMatch(/corrupted/)
          }
          expect(yield* applied(backend, data, env)).toEqual(before)
        }),
      60_000
    )
  })
}
