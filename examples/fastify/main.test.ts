/**
 * The Fastify example as a user runs it: `node main.mjs` in a fresh folder, real Fastify on a real
 * socket. The host's route runs an app as a team's workspace; appexec's API answers under
 * `/appexec` (Fastify keeps the prefix) in a scope without body parsers, beside Fastify's JSON
 * parser; appexec's lines reach Fastify's pino logger; SIGTERM stops it cleanly, and a restart on
 * the same folder finds its key again. And the naive mount, behind Fastify's parser: refused at
 * once with a message that says why, never left hanging.
 */
import { createAppexec } from "@appexec/embed"
import { describe, expect, it } from "@effect/vitest"
import Fastify from "fastify"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll } from "vitest"

const program = fileURLToPath(new URL("./main.mjs", import.meta.url))
const cwd = mkdtempSync(join(tmpdir(), "appexec-fastify-"))
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
  return { status: response.status, text, json: () => JSON.parse(text) }
}

const stop = async (host: Host) => {
  host.child.kill("SIGTERM")
  expect(await host.exited).toBe(0)
  expect(host.output()).toContain("host stopped")
}

const json = { "content-type": "application/json" }

describe("the Fastify example", () => {
  it("serves its route and appexec's API side by side, logs to pino, and stops on SIGTERM", async () => {
    const host = await startHost()
    try {
      expect(host.key).toBeDefined()
      const key = host.key!

      // The host's route, its body parsed by Fastify: the app run as the team's workspace.
      const greeted = await send(`${host.url}/teams/acme/greetings`, {
        method: "POST",
        headers: json,
        body: JSON.stringify({ who: "Ada" })
      })
      expect(greeted.json()).toEqual({ greeting: "Hello Ada, in a warm tone." })
      const refused = await send(`${host.url}/teams/acme/greetings`, { method: "POST", headers: json, body: "{}" })
      expect(refused.status).toBe(400)
      expect(refused.json().details).toEqual([{ parameter: "who", problem: "missing_required" }])

      // appexec's API under /appexec: bodies reach it as sent.
      const apps = await send(`${host.url}/appexec/v1/apps`, { headers: { "x-api-key": key } })
      expect(apps.status).toBe(200)
      const appId: string = apps.json().data[0].appId
      const started = await send(`${host.url}/appexec/v1/apps/${appId}/executions`, {
        method: "POST",
        headers: { ...json, "x-api-key": key },
        body: JSON.stringify({ inputs: { who: "Grace", tone: "formal" } })
      })
      expect(started.status).toBe(202)
      const execution = (await send(`${host.url}/appexec/v1/executions/${started.json().data.executionId}`, {
        headers: { "x-api-key": key, prefer: "wait=10" }
      })).json().data
      expect(execution.outputs[0].value).toBe("Hello Grace, in a formal tone.")
      const broken = await send(`${host.url}/appexec/v1/apps/${appId}/executions`, {
        method: "POST",
        headers: { ...json, "x-api-key": key },
        body: "{\"inputs\":"
      })
      expect(broken.status).toBe(400)
      expect(broken.json().error.message).toContain("not valid JSON")
      // Under the prefix, a path that is no endpoint is appexec's 404; outside it, Fastify's.
      expect((await send(`${host.url}/appexec/v2/apps`)).json().error.code).toBe("not_found")
      expect((await send(`${host.url}/v1/apps`)).json().message).toBe("Route GET:/v1/apps not found")

      // appexec's lines in pino's JSON, with their fields.
      const lines = host.output().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
      expect(lines).toContainEqual(
        expect.objectContaining({ level: 30, msg: expect.stringMatching(/^signing key .+ generated$/) })
      )
      // Request lines are at debug by default: the host's log at info holds none of appexec's.
      expect(lines.some((l) => l.route !== undefined)).toBe(false)
    } finally {
      await stop(host)
    }

    const again = await startHost()
    try {
      expect(again.key).toBeUndefined()
      expect((await send(`${again.url}/appexec/v1/apps`, { headers: { "x-api-key": host.key! } })).status).toBe(200)
    } finally {
      await stop(again)
    }
  }, 60_000)

  it("mounted naively behind Fastify's JSON parser, a body it read is refused at once with the reason", async () => {
    const appexec = await createAppexec({ storage: { memory: true }, basePath: "/appexec", logger: false })
    const fastify = Fastify()
    fastify.all("/appexec/*", (request, reply) => {
      reply.hijack()
      appexec.handler(request.raw, reply.raw)
    })
    try {
      const url = await fastify.listen({ port: 0, host: "127.0.0.1" })
      const { appId } = await appexec.apps.import({
        name: "Echo",
        public: true,
        nodes: [
          { id: "text", type: "input.text", label: "Text", config: { name: "text" } },
          { id: "out", type: "output.text", label: "Out" }
        ],
        edges: [{ source: "text", target: "out" }]
      })
      const { key } = await appexec.keys.create()
      const refused = await send(`${url}/appexec/v1/apps/${appId}/executions`, {
        method: "POST",
        headers: { ...json, "x-api-key": key },
        body: JSON.stringify({ inputs: { text: "hi" } })
      })
      expect(refused.status).toBe(400)
      expect(refused.json().error.message).toContain("read by the host before appexec")
      // What has no body is served as usual.
      expect((await send(`${url}/appexec/v1/apps`, { headers: { "x-api-key": key } })).status).toBe(200)
    } finally {
      await fastify.close()
      await appexec.close()
    }
  })
})
