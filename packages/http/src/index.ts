/**
 * @appexec/http: the six endpoints of appexec on @effect/platform `HttpApi`, with Node and web
 * handlers for embedding. `Api`, `ApiError` and `Authentication` have no Node imports.
 */
export * as Api from "./Api.js"
export * as ApiError from "./ApiError.js"
export * as AppexecHttp from "./AppexecHttp.js"
export * as Auth from "./Auth.js"
export * as Authentication from "./Authentication.js"
export * as Handlers from "./Handlers.js"
export * as MediaRoute from "./MediaRoute.js"
export * as NodeListener from "./NodeListener.js"
export * as OpenApiDocument from "./OpenApiDocument.js"
export * as RateLimit from "./RateLimit.js"
export * as WebHandler from "./WebHandler.js"
