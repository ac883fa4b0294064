/**
 * The authentication of the API, as declared (docs/api.md#authentication): a workspace API key in
 * `x-api-key` or `Authorization: Bearer`, and the 401 of a request without a valid one. The server
 * checks the key through the `Appexec` facade (`@appexec/http`'s `AppexecHttp`) and hands the
 * `Principal` to the endpoint.
 */
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { Unauthenticated } from "./ApiError.js"
import type { ApiKeyId, UserId, WorkspaceId } from "./Ids.js"

/** Who is calling: the workspace, user and key of an authenticated request. */
export interface Principal {
  readonly workspaceId: WorkspaceId
  readonly userId: UserId
  readonly apiKeyId: ApiKeyId
}

/** Requires a valid API key on every endpoint it guards (answered 401 `Unauthenticated` without one). */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("@appexec/api/Authentication", {
  failure: Unauthenticated,
  security: {
    apiKey: HttpApiSecurity.apiKey({ in: "header", key: "x-api-key" }).pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "A workspace API key.")
    ),
    bearer: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "The same API key as a Bearer token.")
    )
  }
}) {}
