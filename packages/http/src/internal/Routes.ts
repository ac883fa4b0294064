/**
 * The route table of the API, read once from its `HttpApi` definition: every endpoint's method,
 * path template (with the API's `/v1` prefix), whether it needs a key, and its status on success.
 * Matching a request is a walk over path segments; nothing is matched by regular expression.
 */
import { Api, Authentication } from "@appexec/api"
import * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"

/** Every endpoint of the API. */
type AllGroups = typeof Api.AppexecApi extends HttpApi.HttpApi<infer _Id, infer Groups, infer _E, infer _R> ? Groups
  : never

/** Every endpoint of the API. */
export type AnyEndpoint = HttpApiGroup.HttpApiGroup.Endpoints<AllGroups>

/** The names of the endpoints. */
export type EndpointName = HttpApiEndpoint.HttpApiEndpoint.Name<AnyEndpoint>

/** One endpoint, ready to serve. */
export interface Route {
  /** The endpoint's name in the definition, e.g. `getExecution`. */
  readonly name: string
  readonly method: string
  /** The path template, e.g. `/v1/apps/:appId`: also the route name in logs and metrics. */
  readonly template: string
  /** Whether the endpoint requires an API key. */
  readonly authenticated: boolean
  /** The status of a successful answer. */
  readonly successStatus: number
}

/** What a request's method and path matched. */
export type Match =
  | { readonly _tag: "Found"; readonly route: Route; readonly params: Readonly<Record<string, string>> }
  | { readonly _tag: "MethodNotAllowed"; readonly allow: ReadonlyArray<string> }
  | { readonly _tag: "NotFound" }

interface Compiled {
  readonly route: Route
  /** Path segments; a parameter segment is `:name`. */
  readonly segments: ReadonlyArray<string>
}

/** Splits a path into its segments, decoded; none when a segment is not valid percent-encoding. */
const segmentsOf = (path: string): ReadonlyArray<string> | undefined => {
  const parts = path.split("/").slice(1)
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop()
  if (!path.includes("%")) return parts
  try {
    return parts.map(decodeURIComponent)
  } catch {
    return undefined
  }
}

const matches = (compiled: Compiled, segments: ReadonlyArray<string>): Record<string, string> | undefined => {
  if (compiled.segments.length !== segments.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < segments.length; i++) {
    const template = compiled.segments[i]!
    const segment = segments[i]!
    if (template.startsWith(":")) {
      if (segment === "") return undefined
      params[template.slice(1)] = segment
    } else if (template !== segment) return undefined
  }
  return params
}

/** The route table of the API definition. */
export const make = (): {
  readonly routes: ReadonlyArray<Route>
  readonly match: (method: string, path: string) => Match
} => {
  const compiled: Array<Compiled> = []
  HttpApi.reflect(Api.AppexecApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, middleware, successes }) => {
      const template = endpoint.path
      compiled.push({
        segments: template.split("/").slice(1),
        route: {
          name: endpoint.name,
          method: endpoint.method,
          template,
          authenticated: [...middleware].some((tag) => tag.key === Authentication.Authentication.key),
          successStatus: [...successes.keys()][0] ?? 200
        }
      })
    }
  })
  return {
    routes: compiled.map((c) => c.route),
    match: (method, path) => {
      const segments = segmentsOf(path)
      if (segments === undefined) return { _tag: "NotFound" }
      const allow: Array<string> = []
      for (const candidate of compiled) {
        const params = matches(candidate, segments)
        if (params === undefined) continue
        if (candidate.route.method === method) return { _tag: "Found", route: candidate.route, params }
        allow.push(candidate.route.method)
      }
      return allow.length === 0 ? { _tag: "NotFound" } : { _tag: "MethodNotAllowed", allow }
    }
  }
}
