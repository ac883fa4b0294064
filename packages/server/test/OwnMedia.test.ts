/**
 * Chaining apps on a default `appexec serve` (listening on 127.0.0.1, private networks not
 * allowed): `appexec run Poster` prints a signed media URL of the instance, and
 * `appexec run Thumbnail --input image=<that URL>` reads it from the instance's blob store (no
 * request to the loopback address the guard refuses) and produces a real thumbnail; the same URL
 * altered is refused, saying why. Each case runs on SQLite and on PostgreSQL.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import sharp from "sharp"
import { backends } from "./support/Backends.js"
import { appexecRun, startServe, tempDataDir } from "./support/ServeProcess.js"

for (const backend of backends) {
  describe(`appexec serve: the instance's media URLs as inputs, on ${backend.name}`, () => {
    it.live(
      "a Poster's signed URL feeds Thumbnail on a default serve; the same URL altered is refused",
      () =>
        Effect.gen(function*() {
          const env = yield* backend.env
          const serve = yield* startServe(yield* tempDataDir, [], env)

          const poster = yield* appexecRun(["Poster", "--input", "prompt=a lighthouse at dusk"], serve, env)
          expect(poster.code, poster.stderr).toBe(0)
          const posterUrl = new RegExp(`^Poster \\(image\\): (${serve.baseUrl}/media/\\S+)$`, "m").exec(
            poster.stdout
          )?.[1]
          expect(posterUrl, poster.stdout).toBeDefined()

          const thumbnail = yield* appexecRun(["Thumbnail", "--input", `image=${posterUrl}`], serve, env)
          expect(thumbnail.code, thumbnail.stderr).toBe(0)
          const thumbnailUrl = new RegExp(`^Thumbnail \\(image\\): (${serve.baseUrl}/media/\\S+)$`, "m").exec(
            thumbnail.stdout
          )?.[1]
          expect(thumbnailUrl, thumbnail.stdout).toBeDefined()
          const image = yield* Effect.promise(async () => {
            const response = await fetch(thumbnailUrl!)
            return { status: response.status, bytes: new Uint8Array(await response.arrayBuffer()) }
          })
          expect(image.status).toBe(200)
          const meta = yield* Effect.promise(() => sharp(image.bytes).metadata())
          expect([meta.format, meta.width, meta.height]).toEqual(["webp", 256, 256])

          // One character of the signature changed: the instance's path, not its signature.
          const altered = posterUrl!.replace(/sig=([A-Za-z0-9_-])/, (_, c: string) => `sig=${c === "A" ? "B" : "A"}`)
          const refused = yield* appexecRun(["Thumbnail", "--input", `image=${altered}`], serve, env)
          expect(refused.code).not.toBe(0)
          expect(`${refused.stdout}${refused.stderr}`).toContain(
            "image URL refused: this instance's media link is altered or not signed by it"
          )
        }).pipe(Effect.scoped),
      120_000
    )
  })
}
