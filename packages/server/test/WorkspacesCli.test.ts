/**
 * `appexec workspaces set NAME --max-running N|none --max-priority N|none` beside a running
 * `appexec serve`, on SQLite and on PostgreSQL: the limits are stored, listed by `workspaces list`,
 * put back to the default by `none`, checked (a bad value or an unknown workspace exits non-zero
 * with why), and the server refuses a start above the workspace's highest priority.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { backends } from "./support/Backends.js"
import { appexec } from "./support/Bin.js"
import { startServe, tempDataDir } from "./support/ServeProcess.js"

/** Starts the Greeting app with `key` at `priority`: the status and the error, if any. */
const startAt = (baseUrl: string, key: string, priority: number) =>
  Effect.promise(async () => {
    const apps = await fetch(`${baseUrl}/v1/apps`, { headers: { "x-api-key": key } }).then((r) => r.json())
    const greeting = (apps as { data: Array<{ appId: string; name: string }> }).data.find((a) => a.name === "Greeting")!
    const response = await fetch(`${baseUrl}/v1/apps/${greeting.appId}/executions`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ inputs: { who: "Ada" }, priority })
    })
    const body = (await response.json()) as { error?: { code: string; message: string } }
    return { status: response.status, error: body.error }
  })

describe("appexec workspaces set", () => {
  for (const backend of backends) {
    it.scopedLive(
      `sets, lists and puts back a workspace's limits, and the server holds its highest priority, on ${backend.name}`,
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const env = { ...(yield* backend.env), APPEXEC_DATA: dataDir }
          const serve = yield* startServe(dataDir, [], env)
          const run = (...args: Array<string>) => appexec(env, ...args)

          const key = (yield* run("keys", "create", "--workspace", "team", "--user", "ann")).stdout.trim()
          expect(yield* run("workspaces", "set", "team", "--max-running", "3", "--max-priority", "5")).toMatchObject(
            { code: 0, stdout: "team\t3\t5\n" }
          )
          const listed = (yield* run("workspaces", "list")).stdout.trim().split("\n").map((line) => line.split("\t"))
          expect(listed.map((row) => [row[0], row[3], row[4]])).toEqual([
            ["default", "default", "default"],
            ["team", "3", "5"]
          ])

          // The server reads the workspace's highest priority at each raised start.
          expect(yield* startAt(serve.baseUrl, key, 5)).toMatchObject({ status: 202 })
          expect(yield* startAt(serve.baseUrl, key, 6)).toEqual({
            status: 400,
            error: {
              code: "invalid_request",
              message: "`priority` 6 is above 5, the highest this workspace may start at."
            }
          })
          expect(yield* startAt(serve.baseUrl, serve.key, 10)).toMatchObject({ status: 202 })

          // A limit left out stays; none puts back the default.
          expect(yield* run("workspaces", "set", "team", "--max-running", "none")).toMatchObject({
            code: 0,
            stdout: "team\tdefault\t5\n"
          })
          expect(yield* run("workspaces", "set", "team", "--max-priority", "none")).toMatchObject({
            code: 0,
            stdout: "team\tdefault\tdefault\n"
          })
          expect(yield* startAt(serve.baseUrl, key, 10)).toMatchObject({ status: 202 })

          const refusals: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
            [["team", "--max-priority", "11"], "The highest priority must be an integer from 0 to 10, not 11."],
            [["team", "--max-priority", "-1"], "The highest priority must be an integer from 0 to 10, not -1."],
            [["team", "--max-running", "0"], "The most running executions must be a positive integer, not 0."],
            [["team", "--max-running", "two"], "--max-running takes an integer or 'none', not 'two'."],
            [["ghost", "--max-running", "2"], "No workspace is named 'ghost'; `appexec workspaces list` shows them."]
          ]
          for (const [args, message] of refusals) {
            const refused = yield* run("workspaces", "set", ...args)
            expect(refused.code, args.join(" ")).not.toBe(0)
            expect(refused.stderr).toContain(message)
          }
          expect((yield* run("workspaces", "list")).stdout).toMatch(/\nteam\t[0-9a-f-]{36}\t\S+\tdefault\tdefault\n$/)
        }),
      120_000
    )
  }
})
