/**
 * Media outputs: `output.image` and `output.video`. The upstream media (produced, or fetched
 * from a URL through the guarded HTTP port) is stored in the blob store, and the output's value
 * is the absolute URL at which a client downloads it (`MediaUrls`).
 */
import { BlobStore, MediaUrls, NodeType } from "@appexec/core"
import { Effect, Schema } from "effect"
import { createHash } from "node:crypto"
import { type MediaKind, mediaOf } from "../Media.js"

const EXTENSIONS: Readonly<Record<string, string>> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp",
  "image/avif": "avif",
  "image/gif": "gif",
  "video/mp4": "mp4",
  "video/webm": "webm",
  "video/quicktime": "mov",
  "audio/mpeg": "mp3",
  "audio/ogg": "ogg",
  "audio/wav": "wav"
}

/**
 * The blob key of an output's media: under the execution, named by a hash of the bytes and the
 * node id, so a re-run of the same execution writes the same key.
 */
export const blobKeyOf = (executionId: string, nodeId: string, contentType: string, bytes: Uint8Array): string => {
  const hash = createHash("sha256").update(bytes).digest("hex").slice(0, 24)
  const safeNode = nodeId.replace(/[^A-Za-z0-9_.-]/g, "-")
  return `executions/${executionId}/${hash}-${safeNode}.${EXTENSIONS[contentType] ?? "bin"}`
}

const mediaOutput = (kind: Extract<MediaKind, "image" | "video">) =>
  NodeType.defineNode({
    type: `output.${kind}`,
    description:
      `An output of type ${kind}: the upstream ${kind} (or ${kind} URL, fetched) stored and given as a download URL.`,
    role: "output",
    outputType: kind,
    config: Schema.Struct({}),
    run: ({ upstream, execution, node }) =>
      Effect.gen(function*() {
        const media = yield* mediaOf(upstream[0]!, kind)
        const key = blobKeyOf(execution.executionId, node.id, media.contentType, media.bytes)
        const blobs = yield* BlobStore.BlobStore
        yield* blobs
          .put(key, media)
          .pipe(
            Effect.catchTag("StorageError", (error) =>
              Effect.logError(`storing the ${kind} of output '${node.id}' failed`, error).pipe(
                Effect.zipRight(Effect.fail(new NodeType.NodeFailure({ message: `the ${kind} could not be stored` })))
              ))
          )
        const urls = yield* MediaUrls.MediaUrls
        return yield* urls.urlFor(key)
      })
  })

/** `output.image`: an image output; its value is a download URL. */
export const outputImage = mediaOutput("image")

/** `output.video`: a video output (made by a `video.*` node, or fetched from a video URL); its value is a download URL. */
export const outputVideo = mediaOutput("video")
