/**
 * The instance's HTTP API on a real node:http server under `/appexec`: the endpoints there, a
 * path that misses the prefix told where they are, the documentation and health routes only when
 * opted in, the console when asked for; and `fetch`, the same API as a web handler.
 */
import { describe, expect, it } from "@effect/vitest"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach } from "vitest"
import type { Appexec } from "../src/index.js"
import { greeting, memoryInstance } from "./fixtures.js"

const servers: Array<Server> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((done) => server.close(done))))
})

/** `appexec.handler` under `/appexec` of a plain node:http server (which keeps the prefix in the URL). */
const mounted = async (appexec: Appexec) => {
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/appexec") === true) return appexec.handler(req, res)
    res.writeHead(200, { "content-type": "text/plain" }).end("the host's page")
  })
  servers.push(server)
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const status = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, { headers, redirect: "manual" }).then((r) => r.status)

describe("the HTTP API of an instance", () => {
  it("answers under its base path; a path that misses it is a 404 naming it; no docs or health by default", async () => {
    const { appexec } = await memoryInstance({ basePath: "/appexec" })
    const app = await appexec.apps.import(greeting)
    const { key } = await appexec.keys.create()
    const base = await mounted(appexec)
    const headers = { "x-api-key": key, "content-type": "application/json" }
    const started = await fetch(`${base}/appexec/v1/apps/${app.appId}/executions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ inputs: { who: "Ada" } })
    })
    expect(started.status).toBe(202)
    const { data } = (await started.json()) as { data: { executionId: string } }
    // Started over HTTP, awaited in-process: one instance.
    expect((await appexec.executions.await(data.executionId)).outputs[0]?.value).toBe("Hello Ada, warm.")

    const missed = await fetch(`${base}/appexecx/v1/apps`, { headers })
    expect(missed.status).toBe(404)
    const body = (await missed.json()) as { error: { message: string } }
    expect(body.error.message).toBe(
      "No endpoint GET /appexecx/v1/apps: appexec is mounted under /appexec, its endpoints are at /appexec/v1/…."
    )
    for (const path of ["/docs", "/openapi.json", "/healthz", "/readyz", "/console", "/"]) {
      expect(await status(`${base}/appexec${path}`)).toBe(404)
    }
  })

  it("docs, health and console when asked for", async () => {
    const { appexec } = await memoryInstance({ basePath: "/appexec", docs: true, health: true, console: true })
    const base = await mounted(appexec)
    for (const path of ["/docs", "/openapi.json", "/healthz", "/readyz", "/console"]) {
      expect(await status(`${base}/appexec${path}`)).toBe(200)
    }
  })

  it("fetch is the same API as a web handler", async () => {
    const { appexec } = await memoryInstance({ basePath: "/appexec" })
    const { key } = await appexec.keys.create()
    const answer = await appexec.fetch(
      new Request("http://host.example/appexec/v1/apps", { headers: { "x-api-key": key } }),
      { clientAddress: "203.0.113.7" }
    )
    expect(answer.status).toBe(200)
    expect(answer.headers.get("ratelimit-limit")).toBe("100")
  })
})
