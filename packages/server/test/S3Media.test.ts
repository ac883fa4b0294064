/**
 * Media in an S3-compatible bucket (`--media s3://BUCKET/PREFIX`, docs/media.md), on a real
 * s3rver (its own process, port 0) and the compiled command:
 * - `serve --no-worker` and `worker` on PostgreSQL, each on a data directory of its own: a Poster
 *   made by the worker downloads through the API (a PNG, also by range), its object is in the
 *   bucket and nowhere else (no media directory, no blob row), and `appexec prune` deletes it;
 * - `--media-direct`: the output URL is a presigned URL of the bucket that lasts as long as signed
 *   URLs, and it downloads the PNG; the automatic retention of a later start deletes the object;
 * - a bucket that goes away fails the node with a clear message and keeps the execution; a
 *   missing bucket at start stops the command, naming it;
 * - the AWS SDK's Node version notice does not break the JSON log.
 */
import { DeleteBucketCommand, GetObjectCommand, ListObjectsV2Command } from "@aws-sdk/client-s3"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { existsSync } from "node:fs"
import { join } from "node:path"
import sharp from "sharp"
import * as S3rver from "../../s3/test/support/S3rver.js"
import { postgres, query } from "./support/Backends.js"
import { appexecIn } from "./support/Command.js"
import {
  appexecRun as appexecRunWithin,
  restartServe,
  spawnAppexec,
  startServe,
  tempDataDir
} from "./support/ServeProcess.js"

/** Runs `appexec run …args` against a server until it exits (90 s): its exit code and output. */
const appexecRun = (
  args: ReadonlyArray<string>,
  serve: { baseUrl: string; key: string },
  env: Record<string, string>
) => appexecRunWithin(args, serve, env, "90 seconds")

/** The output URL `appexec run Poster` printed. */
const posterUrlOf = (stdout: string) => /^Poster \(image\): (\S+)$/m.exec(stdout)?.[1]

/** Every key of the bucket under `prefix`. */
const keysUnder = (s3: S3rver.Running, prefix: string) =>
  Effect.promise(() => s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }))).pipe(
    Effect.map((page) => (page.Contents ?? []).map((object) => object.Key!))
  )

const download = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { headers })
    return { status: response.status, headers: response.headers, bytes: new Uint8Array(await response.arrayBuffer()) }
  })

describe("appexec with --media s3://…", () => {
  it.live(
    "serve --no-worker and worker on PostgreSQL, on separate data directories: the Poster's PNG is in the bucket, downloads, and prune deletes it",
    () =>
      Effect.gen(function*() {
        const s3 = yield* S3rver.start()
        const env = { ...(yield* postgres.env), ...s3.env }
        const media = ["--media", `s3://${s3.bucket}/appexec`, "--media-endpoint", s3.endpoint]
        const apiDir = yield* tempDataDir
        const workerDir = yield* tempDataDir
        const api = yield* startServe(apiDir, ["--no-worker", ...media], env)
        yield* api.waitFor(new RegExp(`Media: s3://${s3.bucket}/appexec at ${s3.endpoint}`), "stderr")
        const worker = yield* spawnAppexec(["worker", "--data", workerDir, "--public-url", api.baseUrl, ...media], env)
        yield* worker.waitFor(/appexec worker is running/, "stderr", "30 seconds")

        const poster = yield* appexecRun(["Poster", "--input", "prompt=a lighthouse at dusk"], api, env)
        expect(poster.code, `${poster.stdout}${poster.stderr}`).toBe(0)
        const url = posterUrlOf(poster.stdout)
        expect(url, poster.stdout).toMatch(new RegExp(`^${api.baseUrl}/media/executions/`))
        const image = yield* download(url!)
        expect([image.status, image.headers.get("content-type")]).toEqual([200, "image/png"])
        const meta = yield* Effect.promise(() => sharp(image.bytes).metadata())
        expect(meta.format).toBe("png")
        const range = yield* download(url!, { range: "bytes=0-7" })
        expect([range.status, range.headers.get("content-range")]).toEqual([206, `bytes 0-7/${image.bytes.length}`])
        expect(range.bytes).toEqual(image.bytes.subarray(0, 8))

        // The object is in the bucket under the prefix, byte for byte, and in no process's disk or database.
        const key = `appexec/${new URL(url!).pathname.slice("/media/".length)}`
        expect(yield* keysUnder(s3, "appexec/executions/")).toEqual([key])
        const stored = yield* Effect.promise(async () => {
          const object = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))
          return { type: object.ContentType, bytes: await object.Body!.transformToByteArray() }
        })
        expect(stored).toEqual({ type: "image/png", bytes: image.bytes })
        expect([existsSync(join(apiDir, "media")), existsSync(join(workerDir, "media"))]).toEqual([false, false])
        expect(yield* query<{ n: number }>(env, "SELECT count(*)::int AS n FROM blobs")).toEqual([{ n: 0 }])

        const prune = yield* spawnAppexec(["prune", "--retention", "0s", ...media], env)
        const pruned = yield* prune.exited("60 seconds")
        expect([pruned.code, prune.output.stdout.trim()], prune.output.stderr).toEqual([0, "deleted 1"])
        expect(yield* keysUnder(s3, "appexec/executions/")).toEqual([])
        expect((yield* download(url!)).status).toBe(404)
      }).pipe(Effect.scoped),
    180_000
  )

  it.live(
    "--media-direct: the output URL is a presigned URL of the bucket, lasting as long as signed URLs, and it downloads the PNG; the automatic retention deletes the object",
    () =>
      Effect.gen(function*() {
        const s3 = yield* S3rver.start()
        const dataDir = yield* tempDataDir
        const media = ["--media", `s3://${s3.bucket}`, "--media-endpoint", s3.endpoint, "--media-direct"]
        const serve = yield* startServe(dataDir, media, s3.env)
        const poster = yield* appexecRun(["Poster", "--input", "prompt=a harbour"], serve, s3.env)
        expect(poster.code, `${poster.stdout}${poster.stderr}`).toBe(0)
        const url = new URL(posterUrlOf(poster.stdout)!)
        expect(`${url.origin}${url.pathname}`).toMatch(
          new RegExp(`^${s3.endpoint}/${s3.bucket}/executions/[0-9a-f-]{36}/[0-9a-f]{24}-poster\\.png$`)
        )
        expect(url.searchParams.get("X-Amz-Expires")).toBe(String(7 * 24 * 60 * 60))
        expect(url.searchParams.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/)
        const image = yield* download(url.href)
        expect(image.status).toBe(200)
        expect((yield* Effect.promise(() => sharp(image.bytes).metadata())).format).toBe("png")

        // The automatic retention deletes the object with its execution: serve again, keeping nothing.
        serve.child.kill("SIGTERM")
        yield* serve.exited("30 seconds")
        expect((yield* keysUnder(s3, "executions/")).length).toBe(1)
        const again = yield* restartServe(dataDir, [...media, "--retention", "1ms"], s3.env)
        yield* again.waitFor(/retention: deleted 1 finished execution/, "stderr")
        expect(yield* keysUnder(s3, "executions/")).toEqual([])
        expect((yield* download(url.href)).status).toBe(404)
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "a bucket gone while serving fails the node with a clear message and keeps the execution; a missing bucket stops the start",
    () =>
      Effect.gen(function*() {
        const s3 = yield* S3rver.start()
        const dataDir = yield* tempDataDir
        // s3rver checks the access key id, not SigV4 signatures: a secret of the test's own, to look for below.
        const secret = "appexec-test-secret-4f9c2b7d"
        const env = { ...s3.env, AWS_SECRET_ACCESS_KEY: secret }
        const serve = yield* startServe(
          dataDir,
          ["--media", `s3://${s3.bucket}/x`, "--media-endpoint", s3.endpoint],
          env
        )
        yield* Effect.promise(() => s3.client.send(new DeleteBucketCommand({ Bucket: s3.bucket })))
        const poster = yield* appexecRun(["Poster", "--input", "prompt=a storm"], serve, env)
        expect(poster.code).not.toBe(0)
        expect(`${poster.stdout}${poster.stderr}`).toContain("the image could not be stored")
        // The operator's log says why; the execution is kept, failed.
        yield* serve.waitFor(new RegExp(`S3 PutObject on bucket '${s3.bucket}': NoSuchBucket`), "stderr")
        const id = /"message":"execution ([0-9a-f-]{36}) failed"/.exec(serve.output.stderr)?.[1]
        expect(id, serve.output.stderr).toBeDefined()
        const answer = yield* Effect.promise(async () => {
          const response = await fetch(`${serve.baseUrl}/v1/executions/${id}`, { headers: { "x-api-key": serve.key } })
          return { status: response.status, body: (await response.json()) as any }
        })
        expect([answer.status, answer.body.data.status]).toEqual([200, "failed"])
        expect(answer.body.data.errorMessage).toContain("the image could not be stored")
        // Neither the log nor any answer carries the credentials.
        for (
          const text of [serve.output.stdout, serve.output.stderr, poster.stdout, poster.stderr, JSON.stringify(answer)]
        ) {
          expect(text).not.toContain(secret)
          expect(text).not.toMatch(/Signature=|X-Amz-Signature|authorization/i)
        }

        const refused = yield* spawnAppexec(
          [
            "serve",
            "--port",
            "0",
            "--data",
            yield* tempDataDir,
            "--media",
            "s3://no-such-bucket",
            "--media-endpoint",
            s3.endpoint
          ],
          s3.env
        )
        const exit = yield* refused.exited("60 seconds")
        expect(exit.code).not.toBe(0)
        expect(refused.output.stderr).toContain("S3 HeadBucket on bucket 'no-such-bucket'")
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "the AWS SDK's multi-line Node version notice stays out of the JSON log unless the operator set its variable",
    () =>
      Effect.gen(function*() {
        const s3 = yield* S3rver.start()
        const media = ["--media", `s3://${s3.bucket}`, "--media-endpoint", s3.endpoint]
        const stderrOf = (env: Record<string, string>) =>
          Effect.gen(function*() {
            const serve = yield* startServe(yield* tempDataDir, media, { ...s3.env, ...env })
            serve.child.kill("SIGTERM")
            yield* serve.exited("30 seconds")
            return serve.output.stderr
          })
        const old = Number(process.versions.node.split(".")[0]) < 22
        const quiet = yield* stderrOf({})
        const lines = quiet.split("\n").filter((line) => line !== "")
        for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow()
        expect(quiet).not.toContain("NodeVersionSupportWarning")
        const said = lines.map((line) => JSON.parse(line) as { level: string; message: unknown })
          .filter((event) => String(event.message).includes("AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true"))
        expect(said.map((event) => event.level)).toEqual(old ? ["warn"] : [])
        // The operator's own setting is kept: "false" lets the SDK print its notice.
        const loud = yield* stderrOf({ AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "false" })
        expect(loud.includes("NodeVersionSupportWarning")).toBe(old)
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "an admin command that reaches the bucket prints its result and no third-party warning, nor one of its own",
    () =>
      Effect.gen(function*() {
        const s3 = yield* S3rver.start()
        const data = yield* tempDataDir
        const media = ["--media", `s3://${s3.bucket}/appexec`, "--media-endpoint", s3.endpoint]
        // A serve with the bucket records it, so every later command of the deployment knows it.
        const serve = yield* startServe(data, media, s3.env)
        serve.child.kill("SIGTERM")
        yield* serve.exited("30 seconds")
        const run = appexecIn({ ...s3.env, APPEXEC_LOG_FORMAT: "logfmt" })
        for (
          const args of [
            ["prune", "--data", data, ...media],
            ["media", "sweep", "--dry-run", "--data", data],
            ["keys", "list", "--data", data],
            ["executions", "list", "--data", data]
          ]
        ) {
          const ran = yield* run(...args)
          const output = `${ran.stdout}${ran.stderr}`
          expect(ran.code, output).toBe(0)
          expect(output).not.toMatch(/NodeVersionSupportWarning|AWS SDK|\(node:\d+\)|Warning:/)
          expect(ran.stderr).not.toMatch(/level=(warn|error)/)
        }
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "refuses --media that is no s3:// location, --media-direct or --media-endpoint without --media, --media-direct with --media-base-url",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        for (
          const [args, said] of [
            [["--media", "/var/media"], "is not an s3://BUCKET/PREFIX location"],
            [["--media", "s3://Bad_Bucket"], "is not a bucket name"],
            [["--media-direct"], "'--media-direct': presigns URLs of a bucket: give --media"],
            [["--media-endpoint", "http://127.0.0.1:9000"], "'--media-endpoint': applies to a bucket"],
            [
              ["--media", "s3://media", "--media-direct", "--media-base-url", "https://cdn.example.com"],
              "either presigned bucket URLs or under --media-base-url"
            ]
          ] as const
        ) {
          const serve = yield* spawnAppexec(["serve", "--port", "0", "--data", dataDir, ...args])
          const exit = yield* serve.exited("30 seconds")
          expect(exit.code).not.toBe(0)
          expect(`${serve.output.stdout}${serve.output.stderr}`).toContain(said)
        }
      }).pipe(Effect.scoped),
    120_000
  )
})
