/**
 * Media of the standalone server over the real socket: `appexec serve` on a temp data
 * directory runs the poster example started with the printed key; its image URL downloads
 * from the same server with the right headers, outside `/v1` (no rate limit), and is stored by
 * the filesystem blob store under `--data` (on PostgreSQL: in the database, so every process
 * serves it); forged and expired URLs answer 404 in the error body. With `--media-base-url` the
 * URLs point there and the server serves none. Each case runs on SQLite and on PostgreSQL.
 */
import { MediaUrls } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import sharp from "sharp"
import { backends } from "./support/Backends.js"
import { spawnServe, startServe, tempDataDir } from "./support/ServeProcess.js"

const json = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    // Fields are checked one by one below; the shapes are the API's, tested in @appexec/http.
    return { status: response.status, headers: response.headers, body: (await response.json()) as any }
  })

const download = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, headers: response.headers, bytes: new Uint8Array(await response.arrayBuffer()) }
  })

/** Starts the poster app over HTTP and polls (bounded) until the execution is no longer queued or running. */
const runPoster = (baseUrl: string, key: string, prompt: string) =>
  Effect.gen(function*() {
    const headers = { "x-api-key": key }
    const apps = yield* json(`${baseUrl}/v1/apps`, { headers })
    const poster = apps.body.data.find((a: { name: string }) => a.name === "Poster")
    expect(poster).toBeDefined()
    const started = yield* json(`${baseUrl}/v1/apps/${poster.appId}/executions`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ inputs: { prompt, style: "neon" } })
    })
    expect(started.status).toBe(202)
    const executionId: string = started.body.data.executionId
    // A real process runs it: poll every 100 ms, at most 300 times.
    for (let attempt = 0;; attempt++) {
      const polled = yield* json(`${baseUrl}/v1/executions/${executionId}`, { headers })
      const status: string = polled.body.data.status
      if ((status !== "queued" && status !== "running") || attempt === 300) return polled
      yield* Effect.sleep("100 millis")
    }
  })

for (const backend of backends) {
  describe(`appexec serve: media, on ${backend.name}`, () => {
    it.live(
      "the poster's image downloads from the server with its headers; forged and expired URLs answer 404",
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const env = yield* backend.env
          const serve = yield* startServe(dataDir, ["--rate-limit", "1000"], env)
          const done = yield* runPoster(serve.baseUrl, serve.key, "Media over a socket")
          expect(done.body.data.status).toBe("completed")
          const poster = done.body.data.outputs.find((o: { label: string }) => o.label === "Poster")
          expect(poster.type).toBe("image")
          const url: string = poster.value
          expect(url).toMatch(
            new RegExp(
              `^${serve.baseUrl}/media/executions/[0-9a-f-]{36}/[0-9a-f]{24}-poster\\.png\\?exp=\\d+&sig=[A-Za-z0-9_-]{43}$`
            )
          )

          const image = yield* download(url)
          expect(image.status).toBe(200)
          expect(image.headers.get("content-type")).toBe("image/png")
          expect(image.headers.get("content-length")).toBe(String(image.bytes.length))
          expect(image.headers.get("cache-control")).toMatch(/^private, max-age=(\d+), immutable$/)
          const maxAge = Number(/max-age=(\d+)/.exec(image.headers.get("cache-control")!)![1])
          expect(maxAge).toBeGreaterThan(7 * 24 * 3600 - 120)
          expect(maxAge).toBeLessThanOrEqual(7 * 24 * 3600)
          // Every /v1 answer carries the limit's headers; media are outside it.
          expect(image.headers.get("ratelimit-limit")).toBeNull()
          expect(done.headers.get("ratelimit-limit")).toBe("1000")
          const meta = yield* Effect.promise(() => sharp(image.bytes).metadata())
          expect([meta.width, meta.height, meta.format]).toEqual([512, 512, "png"])

          // The blob store holds the bytes under the blob key: on SQLite the filesystem under --data,
          // on PostgreSQL the database (and nothing under --data).
          const mediaDir = join(dataDir, "media")
          const blobKey = new URL(url).pathname.slice("/media/".length)
          expect(yield* backend.blob(dataDir, env, blobKey)).toEqual(image.bytes)
          const files = existsSync(mediaDir)
            ? readdirSync(mediaDir, { recursive: true }).map(String).filter((f) => f.endsWith(".png"))
            : []
          expect(files).toEqual(backend.name === "sqlite" ? [blobKey] : [])

          const forged = yield* json(url.replace(/sig=[A-Za-z0-9_-]{4}/, "sig=AAAA"))
          expect(forged.status).toBe(404)
          expect(forged.body.error.code).toBe("not_found")
          const otherKey = yield* json(url.replace("-poster.png", "-render.png"))
          expect(otherKey.status).toBe(404)

          // Correctly signed with the instance's secret, but expired a second ago.
          const parsed = new URL(url)
          const key = parsed.pathname.slice("/media/".length)
          const secret = yield* backend.mediaSecret(dataDir, env)
          const past = Math.floor(Date.now() / 1000) - 1
          const expired = yield* json(
            `${serve.baseUrl}/media/${key}?exp=${past}&sig=${MediaUrls.signature(secret, key, past)}`
          )
          expect(expired.status).toBe(404)
          expect(expired.body.error).toMatchObject({ code: "not_found" })
          expect(expired.headers.get("cache-control")).toBe("no-store")
          // The same signing with a future expiry is accepted: the 404 above is the expiry's.
          const future = past + 3600
          const valid = yield* download(
            `${serve.baseUrl}/media/${key}?exp=${future}&sig=${MediaUrls.signature(secret, key, future)}`
          )
          expect(valid.status).toBe(200)
          expect(valid.bytes).toEqual(image.bytes)
        }).pipe(Effect.scoped),
      60_000
    )

    it.live(
      "with --public-url the printed curl line and the signed media URLs use the URL clients reach the server at",
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const serve = yield* spawnServe(dataDir, ["--public-url", "https://apps.example.com/"], yield* backend.env)
          const local = (yield* serve.waitFor(
            /appexec is listening on (http:\/\/127\.0\.0\.1:\d+) \(public URL https:\/\/apps\.example\.com\)/,
            "stderr"
          ))[1]!
          const key = (yield* serve.waitFor(
            /curl -H 'x-api-key: (aex_[A-Za-z0-9_-]{43})' https:\/\/apps\.example\.com\/v1\/apps/,
            "stdout"
          ))[1]!
          const done = yield* runPoster(local, key, "Behind a proxy")
          const poster = done.body.data.outputs.find((o: { label: string }) => o.label === "Poster")
          expect(poster.value).toMatch(
            /^https:\/\/apps\.example\.com\/media\/executions\/[0-9a-f-]{36}\/[0-9a-f]{24}-poster\.png\?exp=\d+&sig=/
          )
          // The proxy forwards the path as it is: the signed URL is valid at this server.
          const url = new URL(poster.value)
          const image = yield* download(`${local}${url.pathname}${url.search}`)
          expect(image.status).toBe(200)
        }).pipe(Effect.scoped),
      60_000
    )

    it.live(
      "with APPEXEC_MEDIA_BASE_URL the image URLs point at the public base URL and the server serves none",
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const env = yield* backend.env
          const serve = yield* startServe(dataDir, [], {
            ...env,
            APPEXEC_MEDIA_BASE_URL: "https://cdn.example.com/appexec/"
          })
          const done = yield* runPoster(serve.baseUrl, serve.key, "Published elsewhere")
          expect(done.body.data.status).toBe("completed")
          const poster = done.body.data.outputs.find((o: { label: string }) => o.label === "Poster")
          expect(poster.type).toBe("image")
          expect(poster.value).toMatch(
            /^https:\/\/cdn\.example\.com\/appexec\/executions\/[0-9a-f-]{36}\/[0-9a-f]{24}-poster\.png$/
          )
          const key = new URL(poster.value).pathname.slice("/appexec/".length)
          expect((yield* json(`${serve.baseUrl}/media/${key}`)).status).toBe(404)
          expect(existsSync(join(dataDir, "media.secret"))).toBe(false)
        }).pipe(Effect.scoped),
      60_000
    )
  })
}
