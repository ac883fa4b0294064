/**
 * @appexec/http: the six endpoints of appexec on @effect/platform `HttpApi`, with Node and web
 * handlers for embedding. The API definition itself is `@appexec/api`.
 */
export * as AppexecHttp from "./AppexecHttp.js"
export * as Auth from "./Auth.js"
export * as ErrorMapping from "./ErrorMapping.js"
export * as LocalRateLimitStore from "./LocalRateLimitStore.js"
export * as Handlers from "./Handlers.js"
export * as MediaRoute from "./MediaRoute.js"
export * as NodeListener from "./NodeListener.js"
export * as OpenApiDocument from "./OpenApiDocument.js"
export * as RateLimit from "./RateLimit.js"
export * as WebHandler from "./WebHandler.js"
