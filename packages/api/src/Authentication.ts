/**
 * The authentication middleware of the API, as declared (docs/api.md#authentication): a workspace API key in
 * `x-api-key` or `Authorization: Bearer`. Its implementation over the `Appexec` facade is in `Auth.ts`.
 */
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { Context } from "effect"
import { Unauthenticated } from "./ApiError.js"
import type { ApiKeyId, UserId, WorkspaceId } from "./Ids.js"

/** Who is calling: the workspace, user and key of an authenticated request. */
export interface Principal {
  readonly workspaceId: WorkspaceId
  readonly userId: UserId
  readonly apiKeyId: ApiKeyId
}

/** The caller of an authenticated request: its workspace, user and key. */
export class CurrentPrincipal extends Context.Tag("@appexec/api/CurrentPrincipal")<
  CurrentPrincipal,
  Principal
>() {}

/** Requires a valid API key on every endpoint it guards and provides the `CurrentPrincipal`. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("@appexec/api/Authentication", {
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
