// @ts-check
/**
 * A host Node server with routes of its own (`/` and `/health`) that mounts appexec under
 * `/api`: the six endpoints answer at `/api/v1/…`. The host does not use Effect; it gets a plain
 * `(req, res)` listener from `NodeListener.fromLayer`.
 *
 * Run it with `node examples/host-server/main.mjs`, then follow the printed curl line.
 */
import { Appexec, AppexecLayer, IdGenerator } from "@appexec/core"
import { NodeListener, NodeOutboundHttp } from "@appexec/platform-node"
import { MemoryStorage } from "@appexec/testing"
import { Effect, Layer, ManagedRuntime } from "effect"
import { readFile } from "node:fs/promises"
import { createServer } from "node:http"

/** appexec in memory, with a worker: swap `MemoryStorage.layer` for `SqliteStorage.layer({ filename })` to keep data. */
const AppexecLive = AppexecLayer.make().pipe(
  Layer.provideMerge(MemoryStorage.layer),
  Layer.provide(IdGenerator.IdGenerator.random),
  Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: false }))
)

/**
 * The running host: its server, the API key it created, a way to wait in-process for an
 * execution (what a host does instead of polling), and how to stop it.
 * @typedef {{
 *   readonly server: import("node:http").Server
 *   readonly baseUrl: string
 *   readonly key: string
 *   readonly awaitExecution: (executionId: string) => Promise<unknown>
 *   readonly close: () => Promise<void>
 * }} Host
 */

/**
 * Starts the host on `port` (0: any free port) with the greeting app and one API key.
 * @param {number} [port]
 * @returns {Promise<Host>}
 */
export const startHost = async (port = 0) => {
  const runtime = ManagedRuntime.make(AppexecLive)
  /** @type {unknown} */
  const definition = JSON.parse(
    await readFile(new URL("../../packages/server/apps/greeting.json", import.meta.url), "utf8")
  )
  const key = await runtime.runPromise(
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      yield* appexec.apps.import(definition, { owner: { public: true } })
      return (yield* appexec.keys.create({ workspace: "host", user: "demo" })).key
    })
  )
  // The listener shares the host's appexec instance: built from the runtime's own layer context.
  const appexec = await NodeListener.fromLayer(Layer.succeedContext(await runtime.runtime().then((r) => r.context)), {
    basePath: "/api"
  })
  const server = createServer((req, res) => {
    if (req.url === "/health") {
      res.setHeader("content-type", "text/plain")
      return void res.end("ok\n")
    }
    if (req.url === "/api" || req.url?.startsWith("/api/") === true) return appexec.listener(req, res)
    res.setHeader("content-type", "text/html")
    res.end("<p>The host's own page. appexec lives under <a href=\"/api/v1/apps\">/api/v1</a>.</p>\n")
  })
  await new Promise((resolve) => server.listen(port, "127.0.0.1", () => resolve(undefined)))
  const address = server.address()
  const baseUrl = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : port}`
  return {
    server,
    baseUrl,
    key,
    awaitExecution: (/** @type {string} */ executionId) =>
      runtime.runPromise(Effect.flatMap(Appexec.Appexec, (a) => a.executions.await(executionId))),
    close: async () => {
      await new Promise((resolve) => server.close(() => resolve(undefined)))
      await appexec.dispose()
      await runtime.dispose()
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const host = await startHost(Number(process.env.PORT ?? 3000))
  console.log(`host listening on ${host.baseUrl}`)
  console.log(`curl -H 'x-api-key: ${host.key}' ${host.baseUrl}/api/v1/apps`)
  process.once("SIGTERM", () => void host.close())
  process.once("SIGINT", () => void host.close())
}
