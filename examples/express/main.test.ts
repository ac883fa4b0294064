/**
 * The Express example as a user runs it: `node main.mjs` in a fresh folder, real Express on a real
 * socket. The host's route runs an app as a team's workspace; appexec's API answers under
 * `/appexec` (Express strips the prefix) behind the host's global `express.json()`; appexec's
 * lines reach the host's logger; SIGTERM stops it cleanly, and a restart on the same folder
 * finds its key again instead of making one.
 */
import { describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll } from "vitest"

const program = fileURLToPath(new URL("./main.mjs", import.meta.url))
const cwd = mkdtempSync(join(tmpdir(), "appexec-express-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

interface Host {
  readonly child: ChildProcess
  readonly url: string
  readonly key: string | undefined
  readonly output: () => string
  readonly exited: Promise<number | null>
}

/** Starts the example in `cwd`; resolves once it printed its URL and its last curl line. */
const startHost = () =>
  new Promise<Host>((resolve, reject) => {
    const child = spawn(process.execPath, [program], { cwd, env: { ...process.env, PORT: "0" } })
    let output = ""
    const exited = new Promise<number | null>((done) => child.on("close", done))
    child.stderr.on("data", (chunk: Buffer) => void (output += chunk.toString()))
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      const url = /host listening on (\S+)/.exec(output)?.[1]
      if (url !== undefined && output.includes("/teams/acme/greetings")) {
        resolve({ child, url, key: /\(shown once\): (\S+)/.exec(output)?.[1], output: () => output, exited })
      }
    })
    void exited.then((code) => reject(new Error(`the example exited (${code}):\n${output}`)))
  })

const send = async (url: string, init: RequestInit = {}) => {
  const response = await fetch(url, init)
  const text = await response.text()
  return { status: response.status, type: response.headers.get("content-type"), text, json: () => JSON.parse(text) }
}

const stop = async (host: Host) => {
  host.child.kill("SIGTERM")
  expect(await host.exited).toBe(0)
  expect(host.output()).toContain("host stopped")
}

describe("the Express example", () => {
  it("serves its route and appexec's API side by side, logs to the host's logger, and stops on SIGTERM", async () => {
    const host = await startHost()
    try {
      expect(host.key).toBeDefined()
      const key = host.key!
      const json = { "content-type": "application/json" }

      // The host's route: the app run as the team's workspace, in-process.
      const greeted = await send(`${host.url}/teams/acme/greetings`, {
        method: "POST",
        headers: json,
        body: JSON.stringify({ who: "Ada" })
      })
      expect(greeted.json()).toEqual({ greeting: "Hello Ada, in a warm tone." })
      const refused = await send(`${host.url}/teams/acme/greetings`, { method: "POST", headers: json, body: "{}" })
      expect(refused.status).toBe(400)
      expect(refused.json().details).toEqual([{ parameter: "who", problem: "missing_required" }])

      // appexec's API under /appexec, its bodies read first by the host's express.json().
      const apps = await send(`${host.url}/appexec/v1/apps`, { headers: { "x-api-key": key } })
      expect(apps.status).toBe(200)
      const appId: string = apps.json().data[0].appId
      const started = await send(`${host.url}/appexec/v1/apps/${appId}/executions`, {
        method: "POST",
        headers: { ...json, "x-api-key": key },
        body: JSON.stringify({ inputs: { who: "Grace", tone: "formal" } })
      })
      expect(started.status).toBe(202)
      const executionId: string = started.json().data.executionId
      const execution = (await send(`${host.url}/appexec/v1/executions/${executionId}`, {
        headers: { "x-api-key": key, prefer: "wait=10" }
      })).json().data
      expect(execution.status).toBe("completed")
      expect(execution.outputs[0].value).toBe("Hello Grace, in a formal tone.")
      // A body express.json() does not parse (not JSON) is read by appexec itself, and refused.
      const notJson = await send(`${host.url}/appexec/v1/apps/${appId}/executions`, {
        method: "POST",
        headers: { "content-type": "text/plain", "x-api-key": key },
        body: "who=Ada"
      })
      expect(notJson.status).toBe(400)
      expect(notJson.json().error.message).toContain("must be JSON")
      // Under the prefix, a path that is no endpoint is appexec's 404; outside it, the host's.
      expect((await send(`${host.url}/appexec/v2/apps`)).json().error.code).toBe("not_found")
      expect((await send(`${host.url}/v1/apps`)).type).not.toContain("json")

      // appexec's lines, in the host's logger's format, with their fields.
      const lines = host.output().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
      expect(lines).toContainEqual(
        expect.objectContaining({
          from: "appexec",
          level: "info",
          message: expect.stringMatching(/^signing key .+ generated$/)
        })
      )
      // Request lines are at debug by default: the host's log at info holds none.
      expect(lines.some((l) => l.route !== undefined)).toBe(false)
      expect(lines.some((l) => l.message.startsWith("a host body parser read the request body"))).toBe(true)
    } finally {
      await stop(host)
    }

    // The same folder: the key of the first start is found, not made again, and still works.
    const again = await startHost()
    try {
      expect(again.key).toBeUndefined()
      expect((await send(`${again.url}/appexec/v1/apps`, { headers: { "x-api-key": host.key! } })).status).toBe(200)
    } finally {
      await stop(again)
    }
  }, 60_000)
})
