/**
 * @appexec/http: the endpoints of the appexec API (`@appexec/api`) served over the `Appexec`
 * facade, runtime-neutral: the app (plain request → answer), a web `Request → Response` handler
 * for embedding, the media route, the rate limit, the operator's routes (health, readiness,
 * OpenAPI document, reference page) and the admin app (Prometheus metrics). The Node
 * `(req, res)` listener and the connection-guarding server are `@appexec/platform-node`'s.
 */
export * as AdminHttp from "./AdminHttp.js"
export * as AppexecHttp from "./AppexecHttp.js"
export * as ConsoleRoute from "./ConsoleRoute.js"
export * as Exchange from "./Exchange.js"
export * as MediaRoute from "./MediaRoute.js"
export * as OpenApiDocument from "./OpenApiDocument.js"
export * as OperatorRoutes from "./OperatorRoutes.js"
export * as RateLimit from "./RateLimit.js"
export * as WebHandler from "./WebHandler.js"
