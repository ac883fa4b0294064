/**
 * `@appexec/http/definition`: the API definition alone — endpoints, error classes and the
 * security declaration — with no server code and no Node imports, for clients.
 */
export * as Api from "./Api.js"
export * as ApiError from "./ApiError.js"
export * as Authentication from "./Authentication.js"
