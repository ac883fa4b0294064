/**
 * `appexec keys list` and `keys revoke` beside a running `appexec serve`, on SQLite and on
 * PostgreSQL: a key is listed with the hint the console shows, its workspace and user by name,
 * when it was made and when it was last used (recorded by the server that authenticated it), and
 * is revoked by that hint, by the whole key or by its id; `apps list` names workspaces, and
 * `apps import` of a private definition without an owner names the flags that give one.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { backends } from "./support/Backends.js"
import { appexec } from "./support/Bin.js"
import { startServe, tempDataDir } from "./support/ServeProcess.js"

const status = (url: string, key: string) =>
  Effect.promise(() => fetch(url, { headers: { "x-api-key": key } }).then((r) => r.status))

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const shown = (key: string) => `${key.slice(0, 8)}…${key.slice(-4)}`

describe("appexec keys", () => {
  for (const backend of backends) {
    it.scopedLive(
      `lists keys as the console shows them and revokes them by hint, key or id, on ${backend.name}`,
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const env = { ...(yield* backend.env), APPEXEC_DATA: dataDir }
          const serve = yield* startServe(dataDir, [], env)
          const run = (...args: Array<string>) => appexec(env, ...args)

          const ann = (yield* run("keys", "create", "--workspace", "team", "--user", "ann")).stdout.trim()
          const bob = (yield* run("keys", "create", "--workspace", "team", "--user", "bob")).stdout.trim()
          expect(yield* status(`${serve.baseUrl}/v1/apps`, ann)).toBe(200)

          // The server records ann's use off the request's path: list until it shows.
          const listed = yield* run("keys", "list").pipe(
            Effect.map(({ stdout }) => stdout.trim().split("\n").map((line) => line.split("\t"))),
            Effect.filterOrFail((rows) => rows.find((row) => row[0] === shown(ann))?.[4] !== "never"),
            Effect.retry(Schedule.recurs(50).pipe(Schedule.intersect(Schedule.spaced("100 millis"))))
          )
          expect(listed.map((row) => row.slice(0, 3))).toEqual([
            [shown(serve.key), "default", "admin"],
            [shown(ann), "team", "ann"],
            [shown(bob), "team", "bob"]
          ])
          for (const row of listed) {
            expect(row).toHaveLength(6)
            expect(row[3]).toMatch(ISO)
            expect(row[5]).toMatch(/^[0-9a-f-]{36}$/)
          }
          expect(listed[1]![4]).toMatch(ISO)
          expect(listed[2]![4]).toBe("never")

          expect(yield* run("keys", "revoke", shown(ann))).toMatchObject({ code: 0, stdout: "revoked 1\n" })
          expect(yield* run("keys", "revoke", bob)).toMatchObject({ code: 0, stdout: "revoked 1\n" })
          expect(yield* run("keys", "revoke", listed[0]![5]!)).toMatchObject({ code: 0, stdout: "revoked 1\n" })
          for (const key of [ann, bob, serve.key]) expect(yield* status(`${serve.baseUrl}/v1/apps`, key)).toBe(401)
          const again = yield* run("keys", "revoke", shown(ann))
          expect(again.code).toBe(1)
          expect(again.stderr).toContain(
            `No active key has the hint, id or value '${shown(ann)}'; \`appexec keys list\``
          )
          expect((yield* run("keys", "list")).stdout).toBe("")

          // Apps name their workspace; a private definition needs an owner, and the message names both flags.
          const file = join(dataDir, "private.json")
          writeFileSync(
            file,
            JSON.stringify({
              name: "Private greeting",
              nodes: [
                { id: "who", type: "input.text", config: { name: "who" } },
                { id: "out", type: "output.text", label: "Out" }
              ],
              edges: [{ source: "who", target: "out" }]
            })
          )
          const ownerless = yield* run("apps", "import", file)
          expect(ownerless.code).toBe(1)
          expect(ownerless.stderr).toContain("--workspace NAME")
          expect(ownerless.stderr).toContain("--public")
          const imported = yield* run("apps", "import", file, "--workspace", "team")
          expect(imported.code, imported.stderr).toBe(0)
          const apps = (yield* run("apps", "list")).stdout
          expect(apps).toContain(`${imported.stdout.trim()}\tworkspace team\tPrivate greeting\n`)
          expect(apps).toMatch(/\tpublic\tGreeting\n/)
          expect((yield* run("workspaces", "list")).stdout).toMatch(
            /^default\t[0-9a-f-]{36}\t\S+\tdefault\tdefault\nteam\t/
          )
        }),
      120_000
    )
  }
})
