/**
 * @appexec/api: the contract that server and client share — the resources as they appear on the
 * wire (`App`, `Execution`, `Jwk`, the error body), and the `HttpApi` definition of the endpoints
 * from which the server's routes, the typed client and the OpenAPI document are derived. It
 * depends on effect and @effect/platform only, and runs wherever they run.
 */
export * as Api from "./Api.js"
export * as ApiError from "./ApiError.js"
export * as App from "./App.js"
export * as Authentication from "./Authentication.js"
export * as Envelope from "./Envelope.js"
export * as ErrorBody from "./ErrorBody.js"
export * as Execution from "./Execution.js"
export * as Ids from "./Ids.js"
export * as Jwk from "./Jwk.js"
export * as Live from "./Live.js"
export * as Upload from "./Upload.js"
export * as Webhook from "./Webhook.js"
