/**
 * The one mapping from core's request errors to the API's error responses: the status is chosen
 * here, the code and message come from core.
 */
import { ApiError } from "@appexec/api"
import { Errors } from "@appexec/core"

type BadRequest = ApiError.BadRequest
type Forbidden = ApiError.Forbidden
type NotFound = ApiError.NotFound
type Unauthenticated = ApiError.Unauthenticated
const { BadRequest, Forbidden, NotFound, Unauthenticated } = ApiError

/** The HTTP error that answers a core request error of type `E`. */
export type HttpErrorOf<E extends Errors.RequestError> = E extends Errors.AppNotFound | Errors.ExecutionNotFound
  ? NotFound
  : E extends Errors.AppAccessDenied
    ? Forbidden
    : E extends Errors.Unauthorized
      ? Unauthenticated
      : BadRequest

/** The HTTP error of a core request error: the status is chosen here, code and message come from core. */
export const fromRequestError = <E extends Errors.RequestError>(error: E): HttpErrorOf<E> =>
  toHttpError(error) as HttpErrorOf<E>

const toHttpError = (error: Errors.RequestError): BadRequest | Unauthenticated | Forbidden | NotFound => {
  const body = { error: Errors.toErrorInfo(error) }
  switch (error._tag) {
    case "AppNotFound":
    case "ExecutionNotFound":
      return new NotFound({ error: { ...body.error, code: "not_found" } })
    case "AppAccessDenied":
      return new Forbidden({ error: { ...body.error, code: "forbidden" } })
    case "Unauthorized":
      return new Unauthenticated({ error: { ...body.error, code: "unauthorized" } })
    case "InvalidInputs":
      return new BadRequest({ error: { ...body.error, code: "invalid_inputs" } })
    case "InvalidWebhookUrl":
      return new BadRequest({ error: { ...body.error, code: "invalid_webhook_url" } })
    case "InvalidRequest":
      return new BadRequest({ error: { ...body.error, code: "invalid_request" } })
  }
}

