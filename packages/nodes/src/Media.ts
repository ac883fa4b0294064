/**
 * The media a node reads: produced upstream, or fetched from a URL through the guarded outbound
 * HTTP port, with the checks and the consumer-facing messages of docs/nodes.md#media-from-urls:
 * status, content type against `accept`, size and time. A signed media URL of this instance is
 * read from its blob store instead (`MediaResolver`), with the same content checks and no
 * request. The media outputs and provider nodes read media so, as do the image and video nodes
 * (`@appexec/nodes-image`, `@appexec/nodes-video`) and any node type of a host's own.
 */
import { type BlobStore, MediaResolver, type MediaUrls, NodeType, OutboundHttp } from "@appexec/core"
import { Effect, Option } from "effect"
import { NodesSettings } from "./NodesSettings.js"

/** What reading media from a URL needs: the guarded client and its bounds, and this instance's own media. */
export type MediaServices = OutboundHttp.OutboundHttp | NodesSettings | MediaUrls.MediaUrls | BlobStore.BlobStore

/** A kind of media. */
export type MediaKind = "image" | "video" | "audio"

/** Fetched or produced media bytes. */
export interface Media {
  readonly contentType: string
  readonly bytes: Uint8Array
}

/** The media type of a `Content-Type` value, lower-cased and without parameters. */
export const mediaTypeOf = (contentType: string | undefined): string =>
  (contentType ?? "").split(";")[0]!.trim().toLowerCase()

/** The media kind of a `Content-Type` value, if it is image, video or audio. */
export const kindOf = (contentType: string | undefined): MediaKind | undefined => {
  const top = mediaTypeOf(contentType).split("/")[0]
  return top === "image" || top === "video" || top === "audio" ? top : undefined
}

/** A size in words: `25 MiB`. */
export const formatBytes = (bytes: number): string =>
  bytes >= 1024 * 1024
    ? `${+(bytes / (1024 * 1024)).toFixed(1)} MiB`
    : bytes >= 1024
    ? `${+(bytes / 1024).toFixed(1)} KiB`
    : `${bytes} bytes`

const fail = (message: string) => Effect.fail(new NodeType.NodeFailure({ message }))

/**
 * The consumer's message for a URL refused by the address policy, naming the setting that allows
 * it. A literal address in the URL is named with its kind, as the outbound client words it for a
 * webhook URL; for a host name only the category is said, never what the name resolves to.
 */
export const addressRefusal = (http: OutboundHttp.OutboundHttp["Type"], url: string): string =>
  Option.match(http.refusal?.(url) ?? Option.none(), {
    onSome: (refused) => refused.message.replace(/\.$/, ""),
    onNone: () =>
      "address not allowed; outbound requests reach public addresses only, unless private networks are allowed " +
      "(appexec serve --allow-private-networks, or APPEXEC_ALLOW_PRIVATE_NETWORKS=true)"
  })

/** The consumer's message for a fetch that got no answer: the category only (the detail is in the operator's log). */
const outboundMessage = (
  noun: string,
  url: string,
  http: OutboundHttp.OutboundHttp["Type"],
  error: OutboundHttp.OutboundError,
  limits: NodesSettings["Type"]["media"]
) => {
  switch (error.reason) {
    case "address_not_allowed":
      return `${noun} URL refused: ${addressRefusal(http, url)}`
    case "too_large":
      return `${noun} too large: the URL answered more than ${formatBytes(limits.maxBytes)}`
    case "timeout":
      return `${noun} URL did not answer within ${limits.timeoutMs / 1000} s`
    case "invalid_url":
      return `${noun} URL is not a valid http or https URL`
    case "dns":
      return `${noun} URL's host could not be resolved`
    case "network":
      return `${noun} URL could not be fetched: the connection failed`
  }
}

/** What a media URL may give: its kinds (`accept`) and, when given, the one kind a node needs. */
interface Wanted {
  readonly accept: ReadonlyArray<MediaKind>
  readonly need?: MediaKind | undefined
}

/** GETs the media at `url` over the guarded client; its status must be 2xx. */
const download = (url: string, options: Wanted) =>
  Effect.gen(function*() {
    const http = yield* OutboundHttp.OutboundHttp
    const { media: limits } = yield* NodesSettings
    const noun = options.need ?? "media"
    const response = yield* http
      .request({ method: "GET", url, timeoutMs: limits.timeoutMs, maxResponseBytes: limits.maxBytes })
      .pipe(Effect.catchTag("OutboundError", (error) => fail(outboundMessage(noun, url, http, error, limits))))
    if (response.status >= 300 && response.status < 400) {
      return yield* fail(`${noun} URL answered ${response.status} (redirects are not followed; give the final URL)`)
    }
    if (response.status < 200 || response.status >= 300) return yield* fail(`${noun} URL answered ${response.status}`)
    return yield* checked(response.headers["content-type"], response.body, options)
  })

/** The media of a URL's answer, after the checks of size and content type. */
const checked = (contentType: string | undefined, bytes: Uint8Array, options: Wanted) =>
  Effect.gen(function*() {
    const { media: limits } = yield* NodesSettings
    const noun = options.need ?? "media"
    if (bytes.length > limits.maxBytes) {
      return yield* fail(`${noun} too large: the URL answered more than ${formatBytes(limits.maxBytes)}`)
    }
    const type = mediaTypeOf(contentType)
    const kind = kindOf(contentType)
    const described = type === "" ? "no content type" : `content type ${type}`
    if (options.need !== undefined && kind !== options.need) {
      return yield* fail(
        `not ${options.need === "image" ? "an" : "a"} ${options.need}: the URL answered with ${described}`
      )
    }
    if (kind === undefined || !options.accept.includes(kind)) {
      return yield* fail(
        `not accepted media: the URL answered with ${described}; accepted: ${options.accept.join(", ")}`
      )
    }
    if (type === "image/svg+xml") {
      return yield* fail("not an accepted image: SVG documents are refused; give a raster image")
    }
    const media: Media = { contentType: type, bytes }
    return media
  })

/**
 * The media at `url`: read from the blob store when it is a signed media URL of this instance
 * (refused when that URL is expired, altered or names deleted media), else GET over the guarded
 * client. Either way it must be within the size limit and have a content type whose kind is in
 * `accept` and, when `need` is given, of that kind; SVG is refused (it is a document, not a picture).
 */
export const fetchMedia = (
  url: string,
  options: Wanted
): Effect.Effect<Media, NodeType.NodeFailure, MediaServices> =>
  Effect.gen(function*() {
    const noun = options.need ?? "media"
    const own = yield* MediaResolver.resolve(url).pipe(
      Effect.catchTags({
        OwnMediaRefused: (refused) => fail(`${noun} URL refused: ${refused.message}`),
        StorageError: (error) =>
          Effect.logError("reading media of this instance for a URL input failed", error).pipe(
            Effect.zipRight(fail(`${noun} could not be read from this instance's media`))
          )
      })
    )
    if (Option.isSome(own)) return yield* checked(own.value.contentType, own.value.bytes, options)
    return yield* download(url, options)
  })

/** The media kinds an upstream URL may be, as its parameter declared (any, when it came from elsewhere). */
export const acceptOf = (value: NodeType.NodeValue): ReadonlyArray<MediaKind> =>
  value._tag === "Url" && value.accept !== undefined ? value.accept : ["image", "video", "audio"]

/**
 * The media of an upstream value of kind `need`: produced media as is, a URL fetched. Text is
 * refused, with a special message for an optional URL parameter left empty.
 */
export const mediaOf = (
  upstream: NodeType.UpstreamValue,
  need: MediaKind
): Effect.Effect<Media, NodeType.NodeFailure, MediaServices> => {
  const value = upstream.value
  switch (value._tag) {
    case "Media":
      return value.kind === need
        ? Effect.succeed({ contentType: value.contentType, bytes: value.bytes })
        : fail(`expects ${need === "image" ? "an" : "a"} ${need}, but node '${upstream.nodeId}' produced ${value.kind}`)
    case "Url":
      return fetchMedia(value.url, { accept: acceptOf(value), need })
    case "Text":
      return value.text === ""
        ? fail(`no ${need} was given (node '${upstream.nodeId}' is empty)`)
        : fail(`expects ${need === "image" ? "an" : "a"} ${need}, but node '${upstream.nodeId}' produced text`)
    case "Json":
      return fail(`expects ${need === "image" ? "an" : "a"} ${need}, but node '${upstream.nodeId}' produced JSON`)
  }
}
