/**
 * The header the request nodes share (`http.request`, `http.job`, `provider.*`), written once: a
 * process node of 0–32 inputs whose config holds templates (`{{nodeId}}` placeholders naming
 * upstream nodes) and headers (literal, or the operator's secrets). At import, every placeholder
 * must name an upstream node; at run time, the upstream values the templates read are ready as
 * text and JSON (media cannot be sent in a request: the node fails), the settings are read, and
 * the headers' secrets are resolved for the execution's workspace (`SecretHeaders`), in that
 * order, before the node's own `run`. The import-time checks of URLs, headers and base URLs that
 * several request nodes make are here too.
 */
import { NodeType } from "@appexec/core"
import { Effect, type Schema } from "effect"
import * as NodesSettings from "../NodesSettings.js"
import { originOf } from "./ProviderHttp.js"
import * as SecretHeaders from "./SecretHeaders.js"
import { fill } from "./template.js"

/** Most upstream nodes a request node reads. */
export const MAX_INPUTS = 32

/** What a request node's `run` receives besides the node's context. */
export interface RequestContext<C> extends NodeType.NodeContext<C> {
  /** The settings of the built-in nodes in force (`http` bounds a request, `media` a fetched result). */
  readonly settings: NodesSettings.Settings
  /** The text of an upstream node that a template names (empty for one that is not upstream). */
  readonly textOf: (nodeId: string) => string
  /** The JSON value of an upstream node (its text when it produced no JSON), for a string that is only a placeholder. */
  readonly jsonOf: (nodeId: string) => unknown
  /** The request headers, their secrets resolved and still `Redacted`; names lower-cased. */
  readonly headers: SecretHeaders.Headers
  /** The names of the secrets in `headers`, for the hint of a refused token. */
  readonly secretNames: ReadonlyArray<string>
}

/** A request node: its type, its config and the parts of it that the header reads, and its run. */
export interface RequestNodeSpec<C, CI, R> {
  /** Unique type name, such as `provider.fal`. */
  readonly type: string
  /** One sentence for operators' docs. */
  readonly description: string
  readonly config: Schema.Schema<C, CI>
  /** The node ids that the config's templates name (`{{nodeId}}`). */
  readonly placeholders: (config: C) => ReadonlyArray<string>
  /** The config's headers: a literal value, or the operator's secret with an optional prefix. */
  readonly headers: (config: C) => Readonly<Record<string, string | SecretHeaders.SecretHeader>> | undefined
  /** The config's import-time problems besides its placeholders (each string is one problem). */
  readonly problems?: (config: C) => ReadonlyArray<string>
  readonly run: (context: RequestContext<C>) => Effect.Effect<NodeType.NodeValue, NodeType.NodeFailure, R>
}

/** Defines a request node (`NodeType.defineNode` with the header above). */
export const define = <C, CI, R>(spec: RequestNodeSpec<C, CI, R>) =>
  NodeType.defineNode({
    type: spec.type,
    description: spec.description,
    role: "process",
    inputs: { min: 0, max: MAX_INPUTS },
    config: spec.config,
    check: (config, placement) => [
      ...placeholderProblems(spec.placeholders(config), placement.upstream),
      ...(spec.problems?.(config) ?? [])
    ],
    run: (context) =>
      Effect.gen(function*() {
        const settings = yield* NodesSettings.NodesSettings
        const { jsonOf, textOf } = yield* templateValues(context.upstream, spec.placeholders(context.config))
        const { headers, names } = yield* SecretHeaders.resolve(
          spec.headers(context.config),
          context.execution.workspaceId
        )
        return yield* spec.run({ ...context, settings, textOf, jsonOf, headers, secretNames: names })
      })
  })

/** Import-time problems of the placeholders `ids` of a config: each that names no upstream node. */
export const placeholderProblems = (ids: Iterable<string>, upstream: ReadonlyArray<string>): Array<string> => {
  const problems: Array<string> = []
  for (const id of new Set(ids)) {
    if (!upstream.includes(id)) problems.push(`placeholder {{${id}}} does not name an upstream node`)
  }
  return problems
}

/**
 * The origin of a templated URL of a config (`field` names it in problems), or the problem: it
 * must be an absolute http(s) URL whose scheme and host are written out, not filled.
 */
export const templatedOrigin = (
  field: string,
  url: string
): { readonly origin: string | undefined; readonly problem?: string } => {
  const a = originOf(fill(url, () => "a"))
  const b = originOf(fill(url, () => "b"))
  if (a === undefined) return { origin: a, problem: `${field} must be an absolute http or https URL` }
  if (a !== b) {
    return { origin: a, problem: `${field}: the scheme and host must be written out, not filled from placeholders` }
  }
  return { origin: a }
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const RESERVED = new Set(["host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer"])

/** Import-time problems of a config's headers: a literal string, or a secret with an optional prefix. */
export const headerProblems = (
  headers: Readonly<Record<string, string | { readonly prefix?: string | undefined }>> | undefined
): Array<string> => {
  const problems: Array<string> = []
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!TOKEN.test(name)) problems.push(`header name '${name}' is not valid`)
    else if (RESERVED.has(name.toLowerCase())) problems.push(`header '${name}' is set by appexec`)
    const literal = typeof value === "string" ? value : (value.prefix ?? "")
    if (/[\r\n]/.test(literal)) problems.push(`header '${name}' must be one line`)
    if (literal.includes("{{")) problems.push(`header '${name}': headers are never filled from inputs; use a secret`)
  }
  return problems
}

/** Why a provider node's `baseUrl` cannot be an API root, if it cannot. */
export const baseUrlProblem = (baseUrl: string): string | undefined => {
  if (originOf(baseUrl) === undefined) return "baseUrl must be an absolute http or https URL"
  const url = new URL(baseUrl)
  if (url.search !== "" || url.hash !== "") return "baseUrl takes no query or fragment"
  if (url.username !== "" || url.password !== "") return "baseUrl takes no credentials; name a secret instead"
  if (baseUrl.includes("{{")) return "baseUrl is never filled from inputs"
  return undefined
}

/** The problems of a provider node's optional `baseUrl` (`baseUrlProblem`), as a list. */
export const baseUrlProblems = (baseUrl: string | undefined): ReadonlyArray<string> => {
  const problem = baseUrl === undefined ? undefined : baseUrlProblem(baseUrl)
  return problem === undefined ? [] : [problem]
}

/** An API root as requests are made under it: `baseUrl` of a config, else `fallback`, without a trailing `/`. */
export const apiRoot = (baseUrl: string | undefined, fallback: string): string =>
  (baseUrl ?? fallback).replace(/\/+$/, "")

/**
 * The upstream values a request's templates read, as text and JSON; fails the node when one of
 * the `referenced` nodes produced media, which cannot be sent in a request.
 */
const templateValues = (
  upstream: ReadonlyArray<NodeType.UpstreamValue>,
  referenced: Iterable<string>
): Effect.Effect<Pick<RequestContext<unknown>, "textOf" | "jsonOf">, NodeType.NodeFailure> => {
  const byId = new Map(upstream.map((u) => [u.nodeId, u.value]))
  for (const id of new Set(referenced)) {
    if (byId.get(id)?._tag === "Media") {
      return Effect.fail(
        new NodeType.NodeFailure({ message: `node '${id}' produced media, which cannot be sent in a request` })
      )
    }
  }
  const textOf = (id: string) => {
    const value = byId.get(id)
    return value === undefined ? "" : (NodeType.NodeValue.asText(value) ?? "")
  }
  const jsonOf = (id: string): unknown => {
    const value = byId.get(id)
    return value?._tag === "Json" ? value.json : textOf(id)
  }
  return Effect.succeed({ textOf, jsonOf })
}
