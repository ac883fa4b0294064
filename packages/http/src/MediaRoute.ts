/**
 * The media route of the HTTP app (DESIGN §5): `<base path>/media/<key>?exp=…&sig=…`, outside
 * `/v1`, answering the signed, expiring URLs that media outputs hand out. It serves whenever the
 * context holds `MediaUrls` and a `BlobStore` (it does wherever the built-in nodes run), so the
 * URLs an execution produces are always URLs the same app answers. No authentication (the
 * signature is the credential) and no rate limit; the bytes come with `Content-Type`,
 * `Content-Length`, `ETag` and a `Cache-Control` that ends with the URL's validity (see
 * `MediaUrls.serve`). An unknown, forged, altered or expired path answers 404 in the error body.
 */
import { BlobStore, MediaUrls } from "@appexec/core"
import { HttpServerResponse } from "@effect/platform"
import { Context, Effect, Option } from "effect"

/** The path prefix of media, relative to the base path. */
export const PREFIX = MediaUrls.MEDIA_PATH

/** Whether a path relative to the base path is a media path. */
export const isMediaPath = (path: string): boolean => path.startsWith(PREFIX)

/** A request to the media route, as the HTTP app sees it. */
export interface Request {
  readonly method: string
  /** The path and query relative to the base path, e.g. `/media/executions/…?exp=…&sig=…`. */
  readonly url: string
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly requestId: string
}

/** Answers media requests. */
export type Route = (request: Request) => Effect.Effect<HttpServerResponse.HttpServerResponse>

// The origin is irrelevant to the signature check, which reads only the path and the query.
const ORIGIN = "http://appexec.invalid"

const error = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson({ error: { code, message } }, { status }).pipe(
    HttpServerResponse.setHeaders({ "cache-control": "no-store", ...headers })
  )

/** The HTTP response of a media answer; failures in the error body of the API. */
export const toHttpResponse = (answer: MediaUrls.MediaResponse, requestId: string): HttpServerResponse.HttpServerResponse => {
  switch (answer.status) {
    case 404:
      return error(404, "not_found", "No media at this path: the link is unknown, altered or expired.")
    case 405:
      return error(405, "invalid_request", "Media answer GET and HEAD only.", { allow: "GET, HEAD" })
    case 416:
      return error(416, "invalid_request", "The requested byte range is not satisfiable.", {
        "content-range": answer.headers["content-range"] ?? ""
      })
    case 500:
      return HttpServerResponse.unsafeJson(
        {
          error: {
            code: "internal_error",
            message: `An unexpected error occurred. Quote request id ${requestId} when reporting it.`,
            details: [{ requestId }]
          }
        },
        { status: 500 }
      )
    default:
      return answer.body === undefined
        ? HttpServerResponse.empty({ status: answer.status, headers: answer.headers })
        : HttpServerResponse.uint8Array(answer.body, { status: answer.status, headers: answer.headers })
  }
}

/**
 * The media route over the `MediaUrls` and `BlobStore` of the context; none when either is
 * missing (then `/media/…` is an unknown path like any other).
 */
export const make: Effect.Effect<Option.Option<Route>> = Effect.gen(function* () {
  const urls = yield* Effect.serviceOption(MediaUrls.MediaUrls)
  const blobs = yield* Effect.serviceOption(BlobStore.BlobStore)
  if (Option.isNone(urls) || Option.isNone(blobs)) return Option.none()
  const services = Context.make(MediaUrls.MediaUrls, urls.value).pipe(Context.add(BlobStore.BlobStore, blobs.value))
  const route: Route = (request) =>
    MediaUrls.serve({ method: request.method, url: `${ORIGIN}${request.url}`, headers: request.headers }).pipe(
      Effect.provide(services),
      Effect.map((answer) => toHttpResponse(answer, request.requestId))
    )
  return Option.some(route)
})

/**
 * A warning when the signed media URLs of `MediaUrls` do not point under `basePath` (the
 * instance's base URL must include the mount path, e.g. `https://host.example/api`); none in
 * public mode or when they agree.
 */
export const checkBasePath = (basePath: string): Effect.Effect<void> =>
  Effect.gen(function* () {
    const urls = yield* Effect.serviceOption(MediaUrls.MediaUrls)
    if (Option.isNone(urls)) return
    const probe = new URL(yield* urls.value.urlFor("probe"))
    // Only signed URLs verify; public ones point elsewhere by design.
    if (Option.isNone(yield* urls.value.verify(probe))) return
    if (!probe.pathname.startsWith(`${basePath}${PREFIX}`)) {
      yield* Effect.logWarning(
        `media URLs point at ${probe.origin}${probe.pathname.slice(0, -"probe".length)}, but this app serves them under ` +
          `${basePath}${PREFIX}: give MediaUrls a base URL that ends with the mount path '${basePath || "/"}'`
      )
    }
  })
