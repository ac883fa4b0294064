/**
 * `upload` of both clients against a served instance with signed media URLs (docs/api.md#uploads):
 * bytes typed by what they are, a `Blob` or `File` by its own type, an explicit `contentType`
 * checked by the server; the answer's URL serves the bytes; refusals are `ApiError`s with their
 * status and code.
 */
import { MediaUrls } from "@appexec/core"
import { NodeListener } from "@appexec/platform-node"
import { TestHarness, TestHttpServer } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { AppexecClient, ClientError, createClient } from "../src/index.js"

/** A 1×1 PNG. */
const png = Uint8Array.from(
  atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="),
  (c) => c.charCodeAt(0)
)
/** The first bytes of a GIF. */
const gif = Uint8Array.from("GIF89a\x01\x00\x01\x00\x00\x00\x00;", (c) => c.charCodeAt(0))

/** An instance with signed media URLs, served on a socket of its own; `test` gets its base URL and a key. */
const served = <A, E, R>(maxUploadBytes: number, test: (baseUrl: string, apiKey: string) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const { origin: baseUrl, server } = yield* TestHttpServer.listening
    const instance = TestHarness.layer().pipe(
      Layer.provideMerge(
        MediaUrls.layer({
          mode: "signed",
          baseUrl,
          secret: Redacted.make("a media secret of at least thirty-two bytes")
        })
      )
    )
    return yield* Effect.gen(function*() {
      server.on("request", yield* NodeListener.make({ logRequests: false, maxUploadBytes }))
      const { key } = yield* TestHarness.signIn("consumers", "consumer")
      return yield* test(baseUrl, key)
    }).pipe(Effect.provide(instance))
  })

const download = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { type: response.headers.get("content-type"), bytes: new Uint8Array(await response.arrayBuffer()) }
  })

describe("upload", () => {
  it.scoped("sends bytes typed by what they are, a Blob by its type; the URL serves them", () =>
    served(1024, (baseUrl, apiKey) =>
      Effect.gen(function*() {
        const client = yield* AppexecClient.make({ baseUrl, apiKey })
        const upload = yield* client.upload(png)
        expect(upload).toMatchObject({ contentType: "image/png", bytes: png.length })
        expect(upload.url.startsWith(`${baseUrl}/media/uploads/`)).toBe(true)
        expect(upload.expiresAt).toBeInstanceOf(Date)
        expect(yield* download(upload.url)).toEqual({ type: "image/png", bytes: png })

        const file = new File([gif], "anim.gif", { type: "image/gif" })
        expect((yield* client.upload(file)).contentType).toBe("image/gif")
        // A Blob without a type is typed by its bytes too.
        expect((yield* client.upload(new Blob([gif]))).contentType).toBe("image/gif")
      })))

  it.scoped("refusals are ApiErrors: a type the bytes do not have (415), a body past the bound (413)", () =>
    served(64, (baseUrl, apiKey) =>
      Effect.gen(function*() {
        const client = yield* AppexecClient.make({ baseUrl, apiKey })
        const mismatch = yield* Effect.flip(client.upload(gif, { contentType: "image/png" }))
        expect(mismatch).toBeInstanceOf(ClientError.ApiError)
        expect(mismatch).toMatchObject({ status: 415, code: "unsupported_media_type" })
        const unknown = yield* Effect.flip(client.upload(new TextEncoder().encode("plain text")))
        expect(unknown).toMatchObject({ status: 415, code: "unsupported_media_type" })
        expect(unknown.message).toContain("Send the file's type as Content-Type")
        const large = yield* Effect.flip(client.upload(png))
        expect(large).toMatchObject({ status: 413, code: "payload_too_large" })
      })))

  it.scoped("the Promise client uploads and rejects alike", () =>
    served(1024, (baseUrl, apiKey) =>
      Effect.gen(function*() {
        const client = createClient({ baseUrl, apiKey })
        const upload = yield* Effect.promise(() => client.upload(new Blob([png], { type: "image/png" })))
        expect(yield* download(upload.url)).toEqual({ type: "image/png", bytes: png })
        const refused = yield* Effect.promise(() =>
          client.upload(png, { contentType: "video/mp4" }).catch((e: unknown) => e)
        )
        expect(refused).toMatchObject({ _tag: "ApiError", status: 415, code: "unsupported_media_type" })
      })))
})
