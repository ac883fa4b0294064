/**
 * The console's route (`@appexec/console`), beside `/v1` when the app is made with
 * `console: true`: `<base path>/console` and every path under it answer the console's page (the
 * paths under it are the page's own routes), `<base path>/console/assets/<name>` the files the
 * page loads, cached for good (their names carry a hash of their content) while the page is
 * checked again at every load (`no-cache`, with an `ETag`). Every answer carries the strict
 * `Content-Security-Policy` the page is made for (its own origin only, no inline script or
 * style; media from anywhere), `X-Content-Type-Options: nosniff` and `Referrer-Policy:
 * no-referrer`. No key (the page signs in with one, on the API) and no rate limit.
 *
 * The console's files are imported when the route is made, so an app without the console loads
 * none of them.
 */
import type { ConsoleAssets } from "@appexec/console"
import { sha256 } from "@noble/hashes/sha2.js"
import { Effect, Encoding } from "effect"
import { noneMatch } from "./internal/EntityTags.js"
import * as ErrorAnswers from "./internal/ErrorAnswers.js"
import type { ServerResponse } from "./internal/Exchange.js"
import * as PageSecurity from "./internal/PageSecurity.js"

/** The console's path, relative to the base path. */
export const PATH = "/console"

/** Whether a path relative to the base path is the console's. */
export const isConsolePath = (path: string): boolean => path === PATH || path.startsWith(`${PATH}/`)

/** Answers a console request: its method, its path relative to the base path, its headers. */
export type Route = (
  method: string,
  path: string,
  headers: Readonly<Record<string, string | undefined>>
) => ServerResponse

/** The files of the console, as `@appexec/console` holds them. */
export type Assets = Pick<typeof ConsoleAssets, "files" | "page" | "contentSecurityPolicy">

const ASSETS = `${PATH}/assets/`

const etagOf = (body: string | Uint8Array) =>
  `"${Encoding.encodeBase64Url(sha256(typeof body === "string" ? new TextEncoder().encode(body) : body)).slice(0, 27)}"`

/**
 * The route over `assets`, for a console under `basePath` (normalized: `""` or `/api`); `mode`
 * `operator` serves the admin port's operator views (`AdminHttp`).
 */
export const fromAssets = (assets: Assets, basePath: string, mode: ConsoleAssets.Mode = "workspace"): Route => {
  const security = PageSecurity.headers(assets.contentSecurityPolicy)
  const html = assets.page(basePath, mode)
  const pageTag = etagOf(html)
  const pageHeaders = { ...security, "cache-control": "no-cache", etag: pageTag }
  const answers = new Map(
    [...assets.files.values()].map((file): readonly [string, ServerResponse] => [
      `${PATH}/${file.path}`,
      {
        status: 200,
        headers: {
          ...security,
          "content-type": file.contentType,
          "cache-control": file.immutable ? "public, max-age=31536000, immutable" : "no-cache"
        },
        body: file.body
      }
    ])
  )
  const refused = (response: ServerResponse): ServerResponse => ({
    status: response.status,
    headers: { ...response.headers, ...security, "cache-control": "no-store" },
    body: response.body
  })

  return (method, path, headers) => {
    if (method !== "GET" && method !== "HEAD") {
      return refused(ErrorAnswers.methodNotAllowed(method, path, ["GET", "HEAD"]))
    }
    const head = method === "HEAD"
    if (path.startsWith(ASSETS)) {
      const answer = answers.get(path)
      if (answer === undefined) {
        return refused(ErrorAnswers.fromInfo({ code: "not_found", message: `The console has no file ${path}.` }))
      }
      return head ? { ...answer, body: undefined } : answer
    }
    if (noneMatch(headers["if-none-match"], pageTag)) return { status: 304, headers: pageHeaders, body: undefined }
    return {
      status: 200,
      headers: { ...pageHeaders, "content-type": "text/html; charset=utf-8" },
      body: head ? undefined : html
    }
  }
}

/** The route over the built console of `@appexec/console`, under `basePath`, in `mode`. */
export const make = (basePath: string, mode: ConsoleAssets.Mode = "workspace"): Effect.Effect<Route> =>
  Effect.tryPromise(() => import("@appexec/console")).pipe(
    Effect.map(({ ConsoleAssets }) => fromAssets(ConsoleAssets, basePath, mode)),
    Effect.orDieWith((cause) =>
      new Error("the console could not be loaded (is @appexec/console built? npm run build)", { cause })
    )
  )
