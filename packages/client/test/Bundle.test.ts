/**
 * `@appexec/client` runs wherever `fetch` runs. These tests bundle its main entry as a browser
 * would get it (esbuild, `platform: "browser"`: a Node built-in anywhere in the graph fails the
 * build), check that no module of the server stack is in it, check that under Node's own export
 * conditions it imports no Node built-in either, and run the bundle in a realm that has only
 * web-platform globals — no `process`, `Buffer` or `require` — against a real appexec instance:
 * list the apps, run one by name, and verify its webhook from a web `Request`.
 */
import { WebhookDispatcher } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import { build, type BuildOptions, type Metafile } from "esbuild"
import { builtinModules } from "node:module"
import { fileURLToPath } from "node:url"
import { createContext, runInContext } from "node:vm"
import { gzipSync } from "node:zlib"
import type { createClient as CreateClient } from "../src/index.js"
import { serveFetch } from "./FetchServer.js"
import { instance, serve } from "./ServedInstance.js"

const entry = fileURLToPath(new URL("../src/index.ts", import.meta.url))

/** Packages of the server stack, none of which a consumer may have to load. */
const serverStack = [
  "@appexec/http",
  "@appexec/sqlite",
  "@appexec/nodes",
  "@appexec/nodes-image",
  "@appexec/nodes-video",
  "@appexec/platform-node",
  "@appexec/server",
  "@appexec/testing",
  "@effect/platform-node",
  "better-sqlite3",
  "kysely",
  "sharp",
  "undici",
  "ws",
  "msgpackr"
]

const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]))

/** The main entry bundled with `options`, from the TypeScript sources (as the tests resolve them): its code and graph. */
const bundle = (options: BuildOptions) =>
  Effect.promise(() =>
    build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      metafile: true,
      minify: true,
      conditions: ["@appexec/source"],
      logLevel: "silent",
      ...options
    })
  ).pipe(
    Effect.map((result) => {
      const bytes = result.outputFiles?.[0]?.contents ?? new Uint8Array(0)
      return { bytes, code: new TextDecoder().decode(bytes), metafile: result.metafile }
    })
  )

/** Every module path in the bundle's graph, and every import that stayed outside it. */
const graphOf = (metafile: Metafile | undefined) => {
  const inputs = Object.keys(metafile?.inputs ?? {})
  const external = Object.values(metafile?.inputs ?? {}).flatMap((input) =>
    input.imports.filter((i) => i.external).map((i) => i.path)
  )
  return { inputs, external }
}

const inStack = (path: string) =>
  serverStack.some((name) => path.includes(`node_modules/${name}/`) || path.includes(`/${name.split("/")[1]}/src/`))

/** The globals of a browser (or worker, or Deno) that the client may use, taken from this process. */
const webGlobals = () => ({
  fetch,
  Request,
  Response,
  Headers,
  URL,
  URLSearchParams,
  AbortController,
  AbortSignal,
  TextEncoder,
  TextDecoder,
  ReadableStream,
  Blob,
  FormData,
  Event,
  EventTarget,
  DOMException,
  crypto,
  performance,
  setTimeout,
  clearTimeout,
  setInterval,
  clearInterval,
  queueMicrotask,
  structuredClone,
  atob,
  btoa,
  console
})

/**
 * What the test reads from the bundle's exports. The bundle is built from these very sources, so
 * its `createClient` has their type; the run below shows that it also behaves as they do.
 */
const BundleExports = Schema.Struct({
  createClient: Schema.declare((u): u is typeof CreateClient => typeof u === "function")
})

describe("@appexec/client in a browser bundle", () => {
  it.effect("bundles for the browser with no Node built-in and nothing of the server stack", () =>
    Effect.gen(function*() {
      // A Node built-in anywhere in the graph fails this build ("… is built into node").
      const browser = yield* bundle({ platform: "browser", format: "esm" })
      const { inputs, external } = graphOf(browser.metafile)
      expect(external).toEqual([])
      expect(inputs.filter(inStack)).toEqual([])
      expect(inputs.some((path) => path.includes("packages/core/src/WebhookVerifier.ts"))).toBe(true)
      // The Node helpers (`@appexec/client/node`) stay out of the main entry.
      expect(inputs.filter((path) => path.endsWith("client/src/node.ts"))).toEqual([])
      expect(browser.code).toContain("x-api-key")
      expect(browser.code).not.toMatch(/["']node:/)
      expect(browser.code).not.toMatch(/\brequire\(/)
      const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`
      console.log(
        `@appexec/client browser bundle: ${kib(browser.bytes.length)} minified, ${
          kib(gzipSync(browser.bytes).length)
        } gzipped`
      )
    }))

  it.effect("under Node's export conditions, too, the main entry imports no Node built-in", () =>
    Effect.gen(function*() {
      // Packages resolve differently for Node (`node` condition): msgpackr's Node build, for one, imports node:stream.
      const node = yield* bundle({ platform: "node", format: "esm" })
      const { inputs, external } = graphOf(node.metafile)
      expect(external.filter((path) => builtins.has(path))).toEqual([])
      expect(inputs.filter(inStack)).toEqual([])
    }))

  // Live time: the bundle runs on its own copy of effect, whose clock is the real one.
  it.scopedLive("runs with web-platform globals only: lists, runs an app by name, verifies its webhook from a Request", () =>
    Effect.gen(function*() {
      const iife = yield* bundle({ platform: "browser", format: "iife", globalName: "appexecClient" })
      const realm = createContext(webGlobals())
      runInContext(iife.code, realm, { filename: "appexec-client.browser.js" })
      expect(runInContext("[typeof process, typeof Buffer, typeof require, typeof global]", realm)).toEqual([
        "undefined",
        "undefined",
        "undefined",
        "undefined"
      ])
      const { createClient } = Schema.decodeUnknownSync(BundleExports)(runInContext("appexecClient", realm))

      const served = yield* serve()
      const client = createClient({ baseUrl: served.baseUrl, apiKey: served.apiKey })

      const apps = yield* Effect.promise(() => client.apps.list())
      expect(apps.map((a) => a.name).sort()).toEqual(["Greeting", "Parse"])

      // Each delivery verified twice, by its service signature and by its Standard Webhooks one.
      const deliveries: Array<Either.Either<string, string>> = []
      const receiverUrl = yield* serveFetch(async (request) => {
        const again = request.clone()
        const verified = await client.verifyWebhookRequest(request).then(
          (delivery) => Either.right(`${delivery.scheme} ${delivery.event} ${delivery.execution.status}`),
          (error: unknown) => Either.left(String(error))
        )
        const standard = await client.verifyWebhookRequest(again, { scheme: "standard" }).then(
          (delivery) => Either.right(`${delivery.scheme} ${delivery.event} ${delivery.execution.status}`),
          (error: unknown) => Either.left(String(error))
        )
        deliveries.push(verified, standard)
        return new Response(null, { status: Either.isRight(verified) && Either.isRight(standard) ? 204 : 401 })
      })
      const done = yield* Effect.promise(() =>
        client.run("Parse", { text: "[7]" }, {
          interval: 0,
          webhook: `${receiverUrl}/hook`,
          webhookEvents: ["start", "completed"]
        })
      )
      expect(done.status).toBe("completed")
      yield* Effect.flatMap(WebhookDispatcher.make, (dispatcher) => dispatcher.dispatchDue)
      expect(deliveries.map((d) => Either.getOrElse(d, (error) => error)).sort()).toEqual([
        "service completed completed",
        "service start running",
        "standard completed completed",
        "standard start running"
      ])
    }).pipe(Effect.provide(instance)))
})
