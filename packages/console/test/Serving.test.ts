/**
 * The console served by `@appexec/http` over a real socket (`NodeListener` on the memory
 * harness): the page at `/console` and at every path under it with the security headers, the
 * assets cached for good, `GET /` sent to the console, the same under a base path and through the
 * web handler; and nothing of it with `console: false`.
 */
import { type Jwk } from "@appexec/api"
import { SigningKeys } from "@appexec/core"
import { WebHandler } from "@appexec/http"
import { NodeListener } from "@appexec/platform-node"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { ConsoleAssets } from "../src/index.js"

const jwk: Jwk.Jwk = {
  kty: "OKP",
  crv: "Ed25519",
  x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
  kid: "test-kid",
  use: "sig",
  alg: "EdDSA"
}

/** An instance on memory whose signing keys publish `jwk` and never sign (no webhook is sent here). */
const instance = Layer.provideMerge(
  Layer.succeed(SigningKeys.SigningKeys, {
    keySet: Effect.succeed({ keys: [jwk] }),
    sign: () => Effect.die("the console tests do not sign"),
    signAll: () => Effect.die("the console tests do not sign"),
    rotate: Effect.die("the console tests do not rotate keys")
  }),
  TestHarness.layer()
).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))

/** The status, headers and text of `GET url` (redirects not followed). */
const fetchText = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { redirect: "manual", ...init })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

const securityHeaders = {
  "content-security-policy": ConsoleAssets.contentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
}

const expectSecure = (headers: Headers) => {
  for (const [name, value] of Object.entries(securityHeaders)) expect(headers.get(name), name).toBe(value)
}

const assetPath = (ext: string) => [...ConsoleAssets.files.keys()].find((p) => p.endsWith(`.${ext}`))!

describe("the console over a socket", () => {
  it.scoped("/console and every path under it answer the page, no-cache, with the security headers", () =>
    Effect.gen(function*() {
      const { url } = yield* NodeListener.serve({ console: true })
      for (const path of ["/console", "/console/", "/console/apps", "/console/runs/0000-1", "/console/a/b/c?x=1"]) {
        const page = yield* fetchText(`${url}${path}`)
        expect(page.status, path).toBe(200)
        expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
        expect(page.headers.get("cache-control")).toBe("no-cache")
        expectSecure(page.headers)
        expect(page.text).toBe(ConsoleAssets.page(""))
        expect(page.headers.get("ratelimit-limit")).toBeNull()
      }
      const first = yield* fetchText(`${url}/console`)
      const etag = first.headers.get("etag")!
      expect(etag).toMatch(/^"[\w-]+"$/)
      const again = yield* fetchText(`${url}/console/apps`, { headers: { "if-none-match": etag } })
      expect(again.status).toBe(304)
      expect(again.text).toBe("")
      expectSecure(again.headers)
      // Paths that only start like the console's are not.
      expect((yield* fetchText(`${url}/consoles`)).status).toBe(404)
    }).pipe(Effect.provide(instance)))

  it.scoped("assets answer with their content type, immutable caching and the security headers; others 404", () =>
    Effect.gen(function*() {
      const { url } = yield* NodeListener.serve({ console: true })
      for (
        const [ext, type] of [
          ["js", "text/javascript; charset=utf-8"],
          ["css", "text/css; charset=utf-8"],
          ["svg", "image/svg+xml"]
        ] as const
      ) {
        const path = assetPath(ext)
        const asset = yield* fetchText(`${url}/console/${path}`)
        expect(asset.status).toBe(200)
        expect(asset.headers.get("content-type")).toBe(type)
        expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
        expectSecure(asset.headers)
        expect(asset.text).toBe(ConsoleAssets.files.get(path)!.body)
      }
      const head = yield* fetchText(`${url}/console/${assetPath("js")}`, { method: "HEAD" })
      expect(head.status).toBe(200)
      expect(head.text).toBe("")
      const missing = yield* fetchText(`${url}/console/assets/app-NOTTHERE.js`)
      expect(missing.status).toBe(404)
      expect(missing.headers.get("cache-control")).toBe("no-store")
      expectSecure(missing.headers)
      expect(JSON.parse(missing.text).error.code).toBe("not_found")
      const post = yield* fetchText(`${url}/console`, { method: "POST", body: "x" })
      expect(post.status).toBe(405)
      expect(post.headers.get("allow")).toBe("GET, HEAD")
      expectSecure(post.headers)
    }).pipe(Effect.provide(instance)))

  it.scoped("GET / redirects to the console; the API and the operator routes answer as before", () =>
    Effect.gen(function*() {
      const { url } = yield* NodeListener.serve({ console: true })
      const home = yield* fetchText(`${url}/`)
      expect(home.status).toBe(302)
      expect(home.headers.get("location")).toBe("/console")
      expect((yield* fetchText(`${url}/healthz`)).status).toBe(200)
      expect((yield* fetchText(`${url}/v1/apps`)).status).toBe(401)
    }).pipe(Effect.provide(instance)))

  it.scoped("under a base path, the page, its files and the redirect move with the app", () =>
    Effect.gen(function*() {
      const { url } = yield* NodeListener.serve({ console: true, basePath: "/api" })
      const page = yield* fetchText(`${url}/api/console/runs`)
      expect(page.status).toBe(200)
      expect(page.text).toBe(ConsoleAssets.page("/api"))
      expect(page.text).toContain(`src="/api/console/${assetPath("js")}"`)
      expect((yield* fetchText(`${url}/api/console/${assetPath("css")}`)).status).toBe(200)
      expect((yield* fetchText(`${url}/api`)).headers.get("location")).toBe("/api/console")
      expect((yield* fetchText(`${url}/console`)).status).toBe(404)
    }).pipe(Effect.provide(instance)))

  it.scoped("console: false (the default) serves none of it, and GET / goes to /docs", () =>
    Effect.gen(function*() {
      for (const options of [{ console: false }, {}]) {
        const { url } = yield* NodeListener.serve(options)
        for (const path of ["/console", "/console/apps", `/console/${assetPath("js")}`]) {
          const answer = yield* fetchText(`${url}${path}`)
          expect(answer.status, path).toBe(404)
          expect(answer.headers.get("content-security-policy")).toBeNull()
        }
        expect((yield* fetchText(`${url}/`)).headers.get("location")).toBe("/docs")
      }
    }).pipe(Effect.provide(instance)))
})

describe("the console through the web handler", () => {
  it.scoped("serves the page and the assets under the host's base path", () =>
    Effect.gen(function*() {
      const handler = yield* WebHandler.make({ console: true, basePath: "/appexec" })
      const page = yield* Effect.promise(() => handler(new Request("https://host.example/appexec/console/apps")))
      expect(page.status).toBe(200)
      expectSecure(page.headers)
      expect(yield* Effect.promise(() => page.text())).toBe(ConsoleAssets.page("/appexec"))
      const script = yield* Effect.promise(() =>
        handler(new Request(`https://host.example/appexec/console/${assetPath("js")}`))
      )
      expect(script.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
      expect(yield* Effect.promise(() => script.text())).toBe(ConsoleAssets.files.get(assetPath("js"))!.body)
      const home = yield* Effect.promise(() => handler(new Request("https://host.example/appexec/")))
      expect(home.headers.get("location")).toBe("/appexec/console")
    }).pipe(Effect.provide(instance)))
})
