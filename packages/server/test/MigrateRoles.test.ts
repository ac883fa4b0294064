/**
 * The roles of docs/upgrading.md on PostgreSQL: `appexec migrate` as the owner of the schema, the
 * page's GRANT statements run as written, then every other process as a role with data rights
 * alone and `--no-migrate`: `serve` bootstraps and runs an execution, `secrets set` and
 * `signing-key rotate` work. Before the grants, the same `serve` is refused by the database.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import pg from "pg"
import * as TestDatabase from "../../postgres/test/support/TestDatabase.js"
import { appexecIn, appexecWith } from "./support/Command.js"
import { finished, start } from "./support/EchoToken.js"
import { spawnServe, tempDataDir } from "./support/ServeProcess.js"

const page = fileURLToPath(new URL("../../../docs/upgrading.md", import.meta.url))

/** The page's ```sql block: the grants. */
const grants = () => [...readFileSync(page, "utf8").matchAll(/^```sql\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)

/** Runs `text` (statements separated by `;`) on the database of `env`. */
const execute = (env: Record<string, string>, text: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: env["APPEXEC_DATABASE_URL"]! })
    await client.connect()
    try {
      await client.query(text)
    } finally {
      await client.end()
    }
  })

/** `url` signed in as `role`. */
const as = (url: string, role: string) => {
  const signed = new URL(url)
  signed.username = role
  signed.password = role
  return signed.href
}

describe("migrating as the owner, running as a role with data rights (PostgreSQL)", () => {
  it.scoped(
    "the grants of the page suffice for serve, an execution, secrets and a signing-key rotation",
    () =>
      Effect.gen(function*() {
        const data = yield* tempDataDir
        const admin = { APPEXEC_DATABASE_URL: yield* Effect.promise(() => TestDatabase.create("roles")) }
        const database = new URL(admin.APPEXEC_DATABASE_URL).pathname.slice(1)
        for (const role of ["appexec_owner", "appexec_service"]) {
          yield* execute(
            admin,
            `DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${role}') THEN CREATE ROLE ${role} LOGIN PASSWORD '${role}'; END IF; END $$`
          )
        }
        // The owner owns the database, and so its schema `public`.
        yield* execute(admin, `ALTER DATABASE "${database}" OWNER TO appexec_owner`)
        const owner = { APPEXEC_DATABASE_URL: as(admin.APPEXEC_DATABASE_URL, "appexec_owner") }
        const service = {
          APPEXEC_DATABASE_URL: as(admin.APPEXEC_DATABASE_URL, "appexec_service"),
          APPEXEC_MASTER_KEY: randomBytes(32).toString("base64url"),
          APPEXEC_MIGRATE: "false"
        }
        const migrated = yield* appexecIn(owner)("migrate", "--data", data)
        expect(migrated.code, migrated.stderr).toBe(0)

        const refused = yield* appexecIn(service)("serve", "--port", "0", "--data", data)
        expect(refused.code).not.toBe(0)
        expect(refused.stderr).toMatch(/permission denied/)

        const [statements] = grants()
        expect(grants()).toHaveLength(1)
        yield* execute(owner, statements!)

        const serve = yield* spawnServe(data, ["--no-console"], service)
        const [, key] = yield* serve.waitFor(/API key of workspace "default" \(shown once, keep it\): (\S+)/, "stdout")
        const [, url] = yield* serve.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, "stderr")
        const greeting = (yield* appexecIn(service)("apps", "list", "--data", data)).stdout.split("\n").find((l) =>
          l.endsWith("\tGreeting")
        )!
        const done = yield* finished(url!, key!, yield* start(url!, key!, greeting.split("\t")[0]!, { who: "Ada" }))
        expect(done.status).toBe("completed")
        expect(
          (yield* appexecWith(service, "a-token-of-some-length", "secrets", "set", "SOME_TOKEN", "--data", data)).code
        )
          .toBe(0)
        const rotated = yield* appexecIn(service)("signing-key", "rotate", "--data", data)
        expect(rotated.code, rotated.stderr).toBe(0)
      }),
    90_000
  )
})
