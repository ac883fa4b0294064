/**
 * What a server adapter (the Node listener in `@appexec/platform-node`, `WebHandler`) hands to an
 * app made with `AppexecHttp.make` and gets back: one request and its answer as plain data, and
 * the error answers an adapter writes itself, before or outside the app (a request the server
 * refuses, a server that is not ready), with the same error body as every other answer.
 */
export { answer as errorAnswer, invalidRequest, MAX_ERROR_BODY_BYTES } from "./internal/ErrorAnswers.js"
export type { BodyFailure, ServerRequest, ServerResponse } from "./internal/Exchange.js"
