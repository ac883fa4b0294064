/**
 * The instance's own media as inputs (docs/nodes.md, *Media from URLs*): a URL that is a signed
 * media URL of this instance (`MediaUrls.classify`) is read from the `BlobStore` directly, with
 * no network request, so one app's output can feed another app's `url` input even where the
 * instance's address is private (the default `127.0.0.1`) and outbound requests may not reach
 * it. The blob key comes only from a URL whose signature verified: no other URL reads the store.
 */
import { Effect, Option, Schema } from "effect"
import type { Blob } from "./BlobStore.js"
import { BlobStore } from "./BlobStore.js"
import type { StorageError } from "./Errors.js"
import { MediaUrls } from "./MediaUrls.js"

/** Why a URL under this instance's media path was not read. */
export const RefusalReason = Schema.Literal("expired", "forged", "missing")
export type RefusalReason = typeof RefusalReason.Type

/**
 * A URL under this instance's media path that names no media it can give: expired, not signed
 * by the instance (altered or forged), or signed but its media are gone (deleted with their
 * execution after the retention). `message` is fit to show the consumer who gave the URL.
 */
export class OwnMediaRefused extends Schema.TaggedError<OwnMediaRefused>()("OwnMediaRefused", {
  reason: RefusalReason,
  message: Schema.String
}) {}

const messages: Record<RefusalReason, string> = {
  expired: "this instance's media link has expired (media links are valid for a limited time)",
  forged: "this instance's media link is altered or not signed by it (copy the whole link, with its exp and sig)",
  missing: "this instance's media link names media that no longer exist (deleted with their execution)"
}

/**
 * The media behind `url` when it is a signed media URL of this instance: its blob when the URL
 * verifies now, `OwnMediaRefused` when it is under the instance's media path but expired, forged
 * or gone; none when it is any other URL (the caller fetches it over the network).
 */
export const resolve = Effect.fn("MediaResolver.resolve")(function*(url: string) {
  const urls = yield* MediaUrls
  const own = yield* urls.classify(url)
  switch (own._tag) {
    case "Foreign":
      return Option.none<Blob>()
    case "Expired":
      return yield* new OwnMediaRefused({ reason: "expired", message: messages.expired })
    case "Forged":
      return yield* new OwnMediaRefused({ reason: "forged", message: messages.forged })
    case "Valid": {
      const blobs = yield* BlobStore
      const blob = yield* blobs.get(own.key)
      if (Option.isNone(blob)) return yield* new OwnMediaRefused({ reason: "missing", message: messages.missing })
      return blob
    }
  }
}) satisfies (
  url: string
) => Effect.Effect<Option.Option<Blob>, OwnMediaRefused | StorageError, MediaUrls | BlobStore>
