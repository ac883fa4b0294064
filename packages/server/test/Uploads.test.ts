/**
 * Uploads through the compiled command, on SQLite and on PostgreSQL: `appexec run Thumbnail
 * --input image=@photo.png` uploads the local file (its type told by its bytes, whatever its
 * name) to a default `appexec serve` and the thumbnail of it decodes; the file lands in the
 * instance's store under its workspace's key; `--max-upload` bounds the body (413); a file that
 * is no supported media, or that cannot be read, ends the run with the reason. With media in a
 * bucket handed out directly (`--media-direct`), an upload is still a URL of the instance, its
 * object in the bucket.
 */
import { GetObjectCommand } from "@aws-sdk/client-s3"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import sharp from "sharp"
import * as S3rver from "../../s3/test/support/S3rver.js"
import { backends } from "./support/Backends.js"
import { appexecRun, startServe, tempDataDir } from "./support/ServeProcess.js"

for (const backend of backends) {
  describe(`appexec run --input NAME=@FILE, on ${backend.name}`, () => {
    it.live(
      "uploads the file, runs Thumbnail on it; --max-upload bounds uploads; other files are refused with the reason",
      () =>
        Effect.gen(function*() {
          const env = yield* backend.env
          const dataDir = yield* tempDataDir
          const files = yield* tempDataDir
          const serve = yield* startServe(dataDir, ["--max-upload", "64KiB"], env)

          // A PNG under a name that says nothing of its type.
          const photo = yield* Effect.promise(() =>
            sharp({ create: { width: 300, height: 200, channels: 3, background: "#2a6f97" } }).png().toBuffer()
          )
          const path = join(files, "holiday.bin")
          writeFileSync(path, photo)

          const run = yield* appexecRun(["Thumbnail", "--input", `image=@${path}`], serve, env)
          expect(run.code, run.stderr).toBe(0)
          expect(run.stderr).toContain(`uploaded ${path} (image/png, ${photo.length} bytes) as image`)
          const thumbnailUrl = new RegExp(`^Thumbnail \\(image\\): (${serve.baseUrl}/media/\\S+)$`, "m").exec(
            run.stdout
          )?.[1]
          expect(thumbnailUrl, run.stdout).toBeDefined()
          const thumbnail = yield* Effect.promise(async () =>
            new Uint8Array(await (await fetch(thumbnailUrl!)).arrayBuffer())
          )
          const meta = yield* Effect.promise(() => sharp(thumbnail).metadata())
          expect([meta.format, meta.width, meta.height]).toEqual(["webp", 256, 256])

          // Over HTTP: the upload's answer, and the bytes in the store under the workspace's key.
          const answer = yield* Effect.promise(async () => {
            const response = await fetch(`${serve.baseUrl}/v1/uploads`, {
              method: "POST",
              headers: { "x-api-key": serve.key, "content-type": "image/png" },
              body: photo
            })
            return { status: response.status, body: (await response.json()) as { data: { url: string } } }
          })
          expect(answer.status).toBe(201)
          const key = new URL(answer.body.data.url).pathname.slice("/media/".length)
          expect(key).toMatch(/^uploads\/\d{4}-\d{2}-\d{2}\/[0-9a-f-]{36}\/[0-9a-f-]{36}$/)
          expect(yield* backend.blob(dataDir, env, key)).toEqual(new Uint8Array(photo))

          // 64 KiB is the bound: one byte more is refused.
          const tooLarge = yield* Effect.promise(async () => {
            const response = await fetch(`${serve.baseUrl}/v1/uploads`, {
              method: "POST",
              headers: { "x-api-key": serve.key, "content-type": "image/png" },
              body: new Uint8Array(64 * 1024 + 1)
            })
            return { status: response.status, body: (await response.json()) as { error: { code: string } } }
          })
          expect([tooLarge.status, tooLarge.body.error.code]).toEqual([413, "payload_too_large"])

          const text = join(files, "notes.png")
          writeFileSync(text, "not an image")
          const refused = yield* appexecRun(["Thumbnail", "--input", `image=@${text}`], serve, env)
          expect(refused.code).not.toBe(0)
          expect(`${refused.stdout}${refused.stderr}`).toContain(
            `--input image=@${text}: the file is no image, video or audio file an upload may be (image/png, image/jpeg`
          )

          const missing = yield* appexecRun(["Thumbnail", "--input", `image=@${join(files, "gone.png")}`], serve, env)
          expect(missing.code).not.toBe(0)
          expect(`${missing.stdout}${missing.stderr}`).toContain("the file cannot be read (ENOENT)")
        }).pipe(Effect.scoped),
      120_000
    )
  })
}

describe("appexec run --input NAME=@FILE with --media s3://… --media-direct", () => {
  it.live(
    "the upload is an object of the bucket behind a URL of the instance, and Thumbnail runs on it",
    () =>
      Effect.gen(function*() {
        const s3 = yield* S3rver.start()
        const serve = yield* startServe(
          yield* tempDataDir,
          ["--media", `s3://${s3.bucket}/direct`, "--media-endpoint", s3.endpoint, "--media-direct"],
          s3.env
        )
        const photo = yield* Effect.promise(() =>
          sharp({ create: { width: 64, height: 48, channels: 3, background: "#884422" } }).jpeg().toBuffer()
        )
        const answer = yield* Effect.promise(async () => {
          const response = await fetch(`${serve.baseUrl}/v1/uploads`, {
            method: "POST",
            headers: { "x-api-key": serve.key, "content-type": "image/jpeg" },
            body: photo
          })
          return { status: response.status, body: (await response.json()) as { data: { url: string } } }
        })
        expect(answer.status).toBe(201)
        const url = new URL(answer.body.data.url)
        expect(url.origin).toBe(serve.baseUrl)
        const key = url.pathname.slice("/media/".length)
        const stored = yield* Effect.promise(async () => {
          const object = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `direct/${key}` }))
          return new Uint8Array(await object.Body!.transformToByteArray())
        })
        expect(stored).toEqual(new Uint8Array(photo))

        const run = yield* appexecRun(["Thumbnail", "--input", `image=${url.href}`], serve, s3.env)
        expect(run.code, run.stderr).toBe(0)
        // The thumbnail itself is handed out as a presigned URL of the bucket.
        expect(run.stdout).toContain(`Thumbnail (image): ${s3.endpoint}/${s3.bucket}/direct/executions/`)
      }).pipe(Effect.scoped),
    120_000
  )
})
