/**
 * What a server adapter (the Node listener in `@appexec/platform-node`, `WebHandler`) hands to an
 * app made with `AppexecHttp.make` and gets back: one request and its answer as plain data, and
 * the error answers an adapter writes itself, before or outside the app (a request the server
 * refuses, a server that is not ready), with the same error body as every other answer.
 */
import * as ErrorAnswers from "./internal/ErrorAnswers.js"

export {
  type BodyFailure,
  isStreamed,
  type ServerRequest,
  type ServerResponse,
  type StreamedBody
} from "./internal/Exchange.js"

/** Every error body is smaller than this, in bytes, whatever the request (docs/http.md). */
export const MAX_ERROR_BODY_BYTES = ErrorAnswers.MAX_ERROR_BODY_BYTES

/** The error answer to an `ErrorInfo`, with the status the API definition declares for its code. */
export const apiErrorAnswer = ErrorAnswers.fromInfo

/** An error answer with a status of the transport's own (408, 431, 503…) that no API error declares. */
export const errorAnswer = ErrorAnswers.answer

/** 400 `invalid_request` with `message`. */
export const invalidRequest = ErrorAnswers.invalidRequest
