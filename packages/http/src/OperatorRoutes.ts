/**
 * The operator's routes beside `/v1` (docs/operations.md): `GET /healthz` (the process is up),
 * `GET /readyz` (storage answers and the instance is not draining, else 503), `GET /openapi.json`
 * (the generated document) and `GET /docs` (the API reference page); `GET /` redirects (302) to
 * `/docs`, or to the console when the app serves it, so the bare address a newcomer opens shows
 * something to read. `/docs` carries the security headers of the console (`PageSecurity`), with
 * a `Content-Security-Policy` of its own. No key, no rate limit. They
 * are looked up by exact path before the API's route table, so the API's path pays nothing for them.
 */
import { Appexec } from "@appexec/core"
import { Effect, Option } from "effect"
import type * as DocsPage from "./internal/DocsPage.js"
import * as ErrorAnswers from "./internal/ErrorAnswers.js"
import { json, type ServerResponse } from "./internal/Exchange.js"
import * as PageSecurity from "./internal/PageSecurity.js"
import * as OpenApiDocument from "./OpenApiDocument.js"

/** The paths, relative to the app's base path. */
export const paths = ["/", "/healthz", "/readyz", "/openapi.json", "/docs"] as const

/**
 * Which routes to answer: the health routes (`/healthz`, `/readyz`), the documentation
 * (`/openapi.json`, `/docs`), and `/` (with the documentation unless said otherwise).
 */
export interface Selection {
  readonly health?: boolean | undefined
  readonly docs?: boolean | undefined
  readonly home?: boolean | undefined
}

/** A selection from `true` (all), `false` (none) or some. */
export const selectionOf = (
  operator: boolean | Selection
): { readonly health: boolean; readonly docs: boolean; readonly home: boolean } =>
  typeof operator === "boolean"
    ? { health: operator, docs: operator, home: operator }
    : {
      health: operator.health === true,
      docs: operator.docs === true,
      home: (operator.home ?? operator.docs) === true
    }

const noStore = { "cache-control": "no-store" }

/** The answer to an operator route, or none when `path` is not one. */
export type Lookup = (method: string, path: string) => Effect.Effect<ServerResponse> | undefined

/**
 * The operator routes over the facade of the context, under `basePath` (normalized: `""` or
 * `/api`), those of `selection` (default all); `GET /` redirects to `home` (a path relative to
 * `basePath`).
 */
export const make = (
  basePath = "",
  home = "/docs",
  selection: Selection = { health: true, docs: true, home: true }
): Effect.Effect<Lookup, never, Appexec.Appexec> =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    let openApi: string | undefined
    let docs: Promise<DocsPage.Rendered> | undefined

    const healthz = Effect.succeed(json(200, { status: "ok" }, noStore))
    const readyz = Effect.map(appexec.operator.ready, (reason) =>
      Option.match(reason, {
        onNone: () => json(200, { status: "ok" }, noStore),
        onSome: (why) => json(503, { status: "unavailable", reason: why }, noStore)
      }))
    const openApiJson = Effect.sync(() => {
      openApi ??= JSON.stringify(OpenApiDocument.document())
      return { status: 200, headers: { "content-type": "application/json" }, body: openApi }
    })
    const docsPage = Effect.promise(() => {
      docs ??= import("./internal/DocsPage.js").then((page) => page.render())
      return docs
    }).pipe(
      Effect.map(({ contentSecurityPolicy, html }): ServerResponse => ({
        status: 200,
        headers: { ...PageSecurity.headers(contentSecurityPolicy), "content-type": "text/html; charset=utf-8" },
        body: html
      }))
    )
    const redirect = Effect.succeed<ServerResponse>({
      status: 302,
      headers: { location: `${basePath}${home}`, "cache-control": "no-store" },
      body: ""
    })
    const routes = new Map<string, Effect.Effect<ServerResponse>>([
      ...(selection.home === true ? [["/", redirect]] as const : []),
      ...(selection.docs === true ? [["/openapi.json", openApiJson], ["/docs", docsPage]] as const : []),
      ...(selection.health === true ? [["/healthz", healthz], ["/readyz", readyz]] as const : [])
    ])

    return (method, path) => {
      const route = routes.get(path)
      if (route === undefined) return undefined
      if (method === "GET" || method === "HEAD") return route
      return Effect.succeed(ErrorAnswers.methodNotAllowed(method, path, ["GET", "HEAD"]))
    }
  })
