/**
 * The authentication middleware of the API, as declared (SPEC §5): a workspace API key in
 * `x-api-key` or `Authorization: Bearer`. Its implementation over the `Appexec` facade is in `Auth.ts`.
 */
import type { Appexec } from "@appexec/core"
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context } from "effect"
import { Unauthenticated } from "./ApiError.js"

/** The caller of an authenticated request: its workspace, user and key. */
export class CurrentPrincipal extends Context.Tag("@appexec/http/CurrentPrincipal")<
  CurrentPrincipal,
  Appexec.Principal
>() {}

/** Requires a valid API key on every endpoint it guards and provides the `CurrentPrincipal`. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("@appexec/http/Authentication", {
  failure: Unauthenticated,
  provides: CurrentPrincipal,
  security: {
    apiKey: HttpApiSecurity.apiKey({ in: "header", key: "x-api-key" }).pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "A workspace API key.")
    ),
    bearer: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "The same API key as a Bearer token.")
    )
  }
}) {}
