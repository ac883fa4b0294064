/**
 * The image bytes of `image.ocr`'s upstream value, as the image nodes take theirs
 * (docs/nodes.md, *Media from URLs*): an image produced upstream as it is; a URL read from this
 * instance's blob store when it is one of its signed media URLs (`MediaResolver`, no request),
 * else fetched through the guarded outbound client within the media bounds of `NodesSettings`
 * (`APPEXEC_MEDIA_MAX_BYTES`, `APPEXEC_MEDIA_TIMEOUT_MS`), no redirect followed; the answer must
 * be 2xx, an image, and not SVG.
 */
import { type BlobStore, MediaResolver, type MediaUrls, NodeType, OutboundHttp } from "@appexec/core"
import { NodesSettings } from "@appexec/nodes"
import { Effect, Option } from "effect"

/** What reading an image input needs. */
export type ImageServices =
  | OutboundHttp.OutboundHttp
  | NodesSettings.NodesSettings
  | MediaUrls.MediaUrls
  | BlobStore.BlobStore

const fail = (message: string) => Effect.fail(new NodeType.NodeFailure({ message }))

/** The media type of a `Content-Type` value, lower-cased and without parameters. */
const mediaTypeOf = (contentType: string | undefined) => (contentType ?? "").split(";")[0]!.trim().toLowerCase()

const mebibytes = (bytes: number) => `${+(bytes / (1024 * 1024)).toFixed(1)} MiB`

/** Bytes with a content type, checked: an image, not SVG, within the size bound. */
const checked = (contentType: string | undefined, bytes: Uint8Array, maxBytes: number) => {
  const type = mediaTypeOf(contentType)
  if (bytes.length > maxBytes) return fail(`image too large: the URL answered more than ${mebibytes(maxBytes)}`)
  if (!type.startsWith("image/")) {
    return fail(`not an image: the URL answered with ${type === "" ? "no content type" : `content type ${type}`}`)
  }
  if (type === "image/svg+xml") return fail("not an accepted image: SVG documents are refused; give a raster image")
  return Effect.succeed(bytes)
}

/** The consumer's words for a fetch that got no answer (the detail stays in the operator's log). */
const outboundMessage = (error: OutboundHttp.OutboundError, limits: NodesSettings.Settings["media"]) => {
  switch (error.reason) {
    case "address_not_allowed":
      return `image URL refused: ${error.message.replace(/\.$/, "")}`
    case "too_large":
      return `image too large: the URL answered more than ${mebibytes(limits.maxBytes)}`
    case "timeout":
      return `image URL did not answer within ${limits.timeoutMs / 1000} s`
    case "invalid_url":
      return "image URL is not a valid http or https URL"
    case "dns":
      return "image URL's host could not be resolved"
    case "network":
      return "image URL could not be fetched: the connection failed"
  }
}

/** The image at `url`: this instance's own media from its blob store, any other fetched. */
const fetchImage = (url: string) =>
  Effect.gen(function*() {
    const { media: limits } = yield* NodesSettings.NodesSettings
    const own = yield* MediaResolver.resolve(url).pipe(
      Effect.catchTags({
        OwnMediaRefused: (refused) => fail(`image URL refused: ${refused.message}`),
        StorageError: (error) =>
          Effect.logError("reading media of this instance for image.ocr failed", error).pipe(
            Effect.zipRight(fail("image could not be read from this instance's media"))
          )
      })
    )
    if (Option.isSome(own)) return yield* checked(own.value.contentType, own.value.bytes, limits.maxBytes)
    const http = yield* OutboundHttp.OutboundHttp
    const response = yield* http
      .request({ method: "GET", url, timeoutMs: limits.timeoutMs, maxResponseBytes: limits.maxBytes })
      .pipe(Effect.catchTag("OutboundError", (error) => fail(outboundMessage(error, limits))))
    if (response.status >= 300 && response.status < 400) {
      return yield* fail(`image URL answered ${response.status} (redirects are not followed; give the final URL)`)
    }
    if (response.status < 200 || response.status >= 300) return yield* fail(`image URL answered ${response.status}`)
    return yield* checked(response.headers["content-type"], response.body, limits.maxBytes)
  })

/** The encoded image of `upstream`: produced media of kind image, or an image URL; anything else is refused. */
export const imageOf = (
  upstream: NodeType.UpstreamValue
): Effect.Effect<Uint8Array, NodeType.NodeFailure, ImageServices> => {
  const value = upstream.value
  switch (value._tag) {
    case "Media":
      return value.kind === "image"
        ? Effect.succeed(value.bytes)
        : fail(`expects an image, but node '${upstream.nodeId}' produced ${value.kind}`)
    case "Url":
      return fetchImage(value.url)
    case "Text":
      return value.text === ""
        ? fail(`no image was given (node '${upstream.nodeId}' is empty)`)
        : fail(`expects an image, but node '${upstream.nodeId}' produced text`)
    case "Json":
      return fail(`expects an image, but node '${upstream.nodeId}' produced JSON`)
  }
}
