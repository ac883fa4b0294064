/**
 * Media that follow their store (docs/media.md, *Moving media to a bucket*), on a real s3rver, real
 * files under `--data`, PostgreSQL and the compiled command:
 * - an image made before `--media s3://…` was added still downloads after the restart with it;
 *   `appexec media migrate` moves the data directory's media into the bucket, and killed midway
 *   (SIGKILL) then run again it goes on where it stopped; the old URL then answers from the
 *   bucket; `prune` run without `--media` deletes the executions' objects from the bucket;
 * - during a rolling restart on PostgreSQL, an API with `--media` and one without answer the same
 *   (status, bytes, ETag) for media made before and after, also once `migrate` has emptied the
 *   database's `blobs`; then `prune` without `--media` leaves neither a row nor an object;
 * - `appexec media sweep` finds what an older prune left (an execution deleted, its object kept),
 *   in the bucket and in the data directory, says it with `--dry-run`, deletes it, and spares an
 *   orphan written within `--min-age` and everything an execution still refers to.
 */
import { ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { existsSync, readdirSync, statSync, utimesSync } from "node:fs"
import { join } from "node:path"
import { FileBlobStore } from "../../platform-node/src/index.js"
import * as S3rver from "../../s3/test/support/S3rver.js"
import { postgres, query } from "./support/Backends.js"
import {
  appexecRun as appexecRunWithin,
  restartServe,
  spawnAppexec,
  startServe,
  tempDataDir
} from "./support/ServeProcess.js"

const appexecRun = (
  args: ReadonlyArray<string>,
  serve: { baseUrl: string; key: string },
  env: Record<string, string>
) => appexecRunWithin(args, serve, env, "90 seconds")

/** Runs `appexec run Poster` and answers its output URL. */
const poster = (serve: { baseUrl: string; key: string }, env: Record<string, string>, prompt: string) =>
  Effect.gen(function*() {
    const run = yield* appexecRun(["Poster", "--input", `prompt=${prompt}`], serve, env)
    expect(run.code, `${run.stdout}${run.stderr}`).toBe(0)
    const url = /^Poster \(image\): (\S+)$/m.exec(run.stdout)?.[1]
    expect(url, run.stdout).toBeDefined()
    return url!
  })

/** Every key of the bucket under `prefix` (all pages). */
const keysUnder = (s3: S3rver.Running, prefix: string) =>
  Effect.promise(async () => {
    const keys: Array<string> = []
    let token: string | undefined
    do {
      const page = await s3.client.send(
        new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) })
      )
      keys.push(...(page.Contents ?? []).map((object) => object.Key!))
      token = page.IsTruncated ? page.NextContinuationToken : undefined
    } while (token !== undefined)
    return keys.sort()
  })

/** Every blob file under a data directory's media (metadata left out), as keys; `executions/` only with `executionsOnly`. */
const filesUnder = (mediaDir: string, executionsOnly = true): Array<string> => {
  if (!existsSync(mediaDir)) return []
  return readdirSync(mediaDir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !join(entry.parentPath, entry.name).includes("/.meta/"))
    .map((entry) => join(entry.parentPath, entry.name).slice(mediaDir.length + 1))
    // The retention pass of every start records the last day of uploads it swept (`uploads/swept`).
    .filter((key) => !executionsOnly || key.startsWith("executions/"))
    .sort()
}

const download = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return {
      status: response.status,
      type: response.headers.get("content-type"),
      etag: response.headers.get("etag"),
      bytes: new Uint8Array(await response.arrayBuffer())
    }
  })

/** The media key of an instance URL. */
const keyOf = (url: string) => new URL(url).pathname.slice("/media/".length)

/** `url` asked of another API (same path and signature). */
const at = (api: { baseUrl: string }, url: string) => `${api.baseUrl}${new URL(url).pathname}${new URL(url).search}`

/** Runs an admin command to its end (60 s) and answers its exit code and output. */
const admin = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.gen(function*() {
    const command = yield* spawnAppexec(args, env)
    const { code } = yield* command.exited("90 seconds")
    return { code, stdout: command.output.stdout, stderr: command.output.stderr }
  })

describe("media that follow their store", () => {
  it.live(
    "SQLite: an image made before --media still downloads; migrate moves the rest, resumable after SIGKILL; prune without --media empties the bucket",
    () =>
      Effect.gen(function*() {
        const s3 = yield* S3rver.start()
        const dataDir = yield* tempDataDir
        const mediaDir = join(dataDir, "media")
        const bucket = `s3://${s3.bucket}/appexec`
        const media = ["--media", bucket, "--media-endpoint", s3.endpoint]

        // Before the move: the Poster's PNG is a file of the data directory.
        const before = yield* startServe(dataDir, [], s3.env)
        const oldUrl = yield* poster(before, s3.env, "a lighthouse")
        const original = yield* download(oldUrl)
        expect([original.status, original.type]).toEqual([200, "image/png"])
        expect(filesUnder(mediaDir)).toEqual([keyOf(oldUrl)])
        before.child.kill("SIGTERM")
        yield* before.exited("30 seconds")

        // Restarted with the bucket: the old URL still answers, byte for byte; new media go to the bucket.
        const serve = { ...(yield* restartServe(dataDir, media, s3.env)), key: before.key }
        const again = yield* download(oldUrl.replace(before.baseUrl, serve.baseUrl))
        expect([again.status, again.type]).toEqual([200, "image/png"])
        expect(again.bytes).toEqual(original.bytes)
        const newUrl = yield* poster(serve, s3.env, "a harbour")
        expect(yield* keysUnder(s3, "appexec/executions/")).toEqual([`appexec/${keyOf(newUrl)}`])
        expect(filesUnder(mediaDir)).toEqual([keyOf(oldUrl)])

        // More media in the data directory (under the first execution), enough that a move takes a while.
        const files = FileBlobStore.make(mediaDir)
        const prefix = keyOf(oldUrl).slice(0, keyOf(oldUrl).lastIndexOf("/") + 1)
        const extra = Array.from({ length: 300 }, (_, i) => `${prefix}extra-${String(i).padStart(3, "0")}.png`)
        yield* Effect.forEach(extra, (key, i) =>
          files.put(key, { contentType: "image/png", bytes: Uint8Array.from([137, 80, 78, 71, i % 256]) }), {
          concurrency: 8
        })

        // A move killed midway: some media copied (and gone from the directory), some not.
        const killed = yield* spawnAppexec([
          "media",
          "migrate",
          "--data",
          dataDir,
          "--to",
          bucket,
          "--media-endpoint",
          s3.endpoint
        ], s3.env)
        yield* killed.waitFor(/(?:^copied\t.*\n){20}/m, "stdout", "60 seconds")
        killed.child.kill("SIGKILL")
        yield* killed.exited("30 seconds")
        expect(killed.output.stdout).not.toContain("already there")
        const copiedFirst = (yield* keysUnder(s3, "appexec/executions/")).length - 1
        // Every file the move sees: the 301 blobs of the first execution and the record of swept uploads.
        const leftInFiles = filesUnder(mediaDir, false).length
        expect(copiedFirst).toBeGreaterThanOrEqual(19)
        expect(leftInFiles).toBeGreaterThan(0)
        expect(leftInFiles).toBeLessThanOrEqual(302 - 20)

        // Run again: it goes on where it stopped, and nothing is lost.
        const resumed = yield* admin([
          "media",
          "migrate",
          "--data",
          dataDir,
          "--to",
          bucket,
          "--media-endpoint",
          s3.endpoint
        ], s3.env)
        expect(resumed.code, resumed.stderr).toBe(0)
        const copiedAgain = resumed.stdout.split("\n").filter((line) =>
          line.startsWith("copied\t")
        ).length
        const summary = new RegExp(
          `^${
            mediaDir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
          } -> ${bucket} at ${s3.endpoint}: (\\d+) medi(?:um|a) copied \\(.*\\), (\\d+) already there`,
          "m"
        ).exec(resumed.stdout)
        expect(summary, resumed.stdout).not.toBeNull()
        expect(Number(summary![1])).toBe(copiedAgain)
        // What the killed run copied is not copied again: only what was left, less what it copied before its deletion.
        expect(copiedAgain + Number(summary![2])).toBe(leftInFiles)
        expect(filesUnder(mediaDir, false)).toEqual([])
        expect(yield* keysUnder(s3, "appexec/executions/")).toEqual(
          [keyOf(oldUrl), keyOf(newUrl), ...extra].map((key) => `appexec/${key}`).sort()
        )

        // The old URL now answers from the bucket, byte for byte.
        const moved = yield* download(oldUrl.replace(before.baseUrl, serve.baseUrl))
        expect([moved.status, moved.type]).toEqual([200, "image/png"])
        expect(moved.bytes).toEqual(original.bytes)

        // prune without --media: both executions' objects leave the bucket.
        const pruned = yield* admin(["prune", "--data", dataDir, "--retention", "0s"], s3.env)
        expect([pruned.code, pruned.stdout.trim()], pruned.stderr).toEqual([0, "deleted 2"])
        expect(yield* keysUnder(s3, "appexec/executions/")).toEqual([])
        expect((yield* download(oldUrl.replace(before.baseUrl, serve.baseUrl))).status).toBe(404)
        expect((yield* download(newUrl)).status).toBe(404)
      }).pipe(Effect.scoped),
    240_000
  )

  it.live(
    "PostgreSQL rolling restart: an API with --media and one without answer alike, before and after migrate; prune without --media leaves nothing",
    () =>
      Effect.gen(function*() {
        const s3 = yield* S3rver.start()
        const env = { ...(yield* postgres.env), ...s3.env }
        const bucket = `s3://${s3.bucket}/appexec`
        const media = ["--media", bucket, "--media-endpoint", s3.endpoint]

        // The deployment before: an API and a worker, media in the database.
        const apiA = yield* startServe(yield* tempDataDir, ["--no-worker"], env)
        const oldWorker = yield* spawnAppexec(
          ["worker", "--data", yield* tempDataDir, "--public-url", apiA.baseUrl],
          env
        )
        yield* oldWorker.waitFor(/appexec worker is running/, "stderr", "30 seconds")
        const oldUrl = yield* poster(apiA, env, "a lighthouse")
        expect(yield* query<{ n: number }>(env, "SELECT count(*)::int AS n FROM blobs WHERE key LIKE 'executions/%'"))
          .toEqual([{ n: 1 }])

        // Halfway through the rolling restart: a new API and a new worker with the bucket, the old API still up.
        const apiB = { ...(yield* restartServe(yield* tempDataDir, ["--no-worker", ...media], env)), key: apiA.key }
        const newWorker = yield* spawnAppexec(
          ["worker", "--data", yield* tempDataDir, "--public-url", apiB.baseUrl, ...media],
          env
        )
        yield* newWorker.waitFor(/appexec worker is running/, "stderr", "30 seconds")
        oldWorker.child.kill("SIGTERM")
        yield* oldWorker.exited("30 seconds")
        const newUrl = yield* poster(apiB, env, "a harbour")
        expect(yield* keysUnder(s3, "appexec/executions/")).toEqual([`appexec/${keyOf(newUrl)}`])

        /** Both APIs' answers to `url`: the same status, type, ETag and bytes. */
        const bothAnswer = (url: string) =>
          Effect.gen(function*() {
            const a = yield* download(at(apiA, url))
            const b = yield* download(at(apiB, url))
            expect({ status: b.status, type: b.type, etag: b.etag }).toEqual({
              status: a.status,
              type: a.type,
              etag: a.etag
            })
            expect(b.bytes).toEqual(a.bytes)
            return a
          })
        const old = yield* bothAnswer(oldUrl)
        expect([old.status, old.type]).toEqual([200, "image/png"])
        const fresh = yield* bothAnswer(newUrl)
        expect([fresh.status, fresh.type]).toEqual([200, "image/png"])

        // migrate empties the database's blobs into the bucket; both APIs still answer the old URL.
        const moved = yield* admin(
          ["media", "migrate", "--data", yield* tempDataDir, "--to", bucket, "--media-endpoint", s3.endpoint],
          env
        )
        expect(moved.code, moved.stderr).toBe(0)
        expect(moved.stdout).toMatch(
          new RegExp(`^the database -> ${bucket} at ${s3.endpoint}: \\d+ medi(um|a) copied`, "m")
        )
        expect(yield* keysUnder(s3, "appexec/executions/")).toEqual(
          [keyOf(oldUrl), keyOf(newUrl)].map((k) => `appexec/${k}`).sort()
        )
        expect(yield* query<{ n: number }>(env, "SELECT count(*)::int AS n FROM blobs")).toEqual([{ n: 0 }])
        const afterMove = yield* bothAnswer(oldUrl)
        expect(afterMove.status).toBe(200)
        expect(afterMove.bytes).toEqual(old.bytes)

        // prune with no --media anywhere in its flags or environment.
        const pruned = yield* admin(["prune", "--data", yield* tempDataDir, "--retention", "0s"], env)
        expect([pruned.code, pruned.stdout.trim()], pruned.stderr).toEqual([0, "deleted 2"])
        expect(yield* keysUnder(s3, "appexec/executions/")).toEqual([])
        expect((yield* bothAnswer(oldUrl)).status).toBe(404)
        expect((yield* bothAnswer(newUrl)).status).toBe(404)
      }).pipe(Effect.scoped),
    240_000
  )

  it.live(
    "media sweep finds what an older prune left in the bucket and the data directory, spares recent and referred-to media; --dry-run deletes nothing",
    () =>
      Effect.gen(function*() {
        const s3 = yield* S3rver.start()
        const dataDir = yield* tempDataDir
        const mediaDir = join(dataDir, "media")
        const media = ["--media", `s3://${s3.bucket}/appexec`, "--media-endpoint", s3.endpoint]
        const serve = yield* startServe(dataDir, media, s3.env)
        const orphanUrl = yield* poster(serve, s3.env, "a storm")
        const orphanWritten = Date.now()
        const liveUrl = yield* poster(serve, s3.env, "a calm sea")

        // What a prune that did not know the bucket did: the execution deleted, its object kept.
        const orphanId = keyOf(orphanUrl).split("/")[1]!
        // (As retention deletes an execution: its deliveries and reports first, in one transaction.)
        const db = new Database(join(dataDir, "appexec.db"))
        db.transaction(() => {
          for (const table of ["webhook_outbox", "execution_reports", "execution_logs", "executions"]) {
            db.prepare(`DELETE FROM ${table} WHERE execution_id = ?`).run(orphanId)
          }
        })()
        db.close()
        // And in the data directory, an orphan of an execution that never existed here, two hours old.
        const fileOrphan = `executions/${randomUUID()}/0123-out.png`
        yield* FileBlobStore.make(mediaDir).put(fileOrphan, { contentType: "image/png", bytes: Uint8Array.from([1]) })
        const old = new Date(Date.now() - 2 * 60 * 60 * 1000)
        for (const path of [join(mediaDir, fileOrphan), join(mediaDir, ".meta", `${fileOrphan}.json`)]) {
          utimesSync(path, old, old)
        }
        expect(statSync(join(mediaDir, fileOrphan)).mtimeMs).toBeLessThan(Date.now() - 60 * 60 * 1000)

        // The bucket's orphan must be older than --min-age (its time is kept to the second).
        const minAge = 10_000
        while (Date.now() - orphanWritten < minAge + 1_000) yield* Effect.sleep("200 millis")
        // An orphan written just now: maybe an upload or an output being written; never swept.
        const recentKey = `executions/${randomUUID()}/4567-out.png`
        yield* Effect.promise(() =>
          s3.client.send(
            new PutObjectCommand({
              Bucket: s3.bucket,
              Key: `appexec/${recentKey}`,
              Body: "x",
              ContentType: "image/png"
            })
          )
        )
        const all = [keyOf(orphanUrl), keyOf(liveUrl), recentKey].map((key) => `appexec/${key}`).sort()
        expect(yield* keysUnder(s3, "appexec/executions/")).toEqual(all)

        const dry = yield* admin(["media", "sweep", "--data", dataDir, "--min-age", "10s", "--dry-run"], s3.env)
        expect(dry.code, dry.stderr).toBe(0)
        const lines = dry.stdout.split("\n")
        expect(
          lines.some((line) => line.startsWith(`would delete\t${keyOf(orphanUrl)}\t`) && line.endsWith("\texecution"))
        )
          .toBe(true)
        expect(lines).toContain(`would delete\t${fileOrphan}\t1\texecution`)
        expect(lines.some((line) => line.startsWith(`kept (recent)\t${recentKey}\t`))).toBe(true)
        expect(dry.stdout).not.toContain(keyOf(liveUrl))
        expect(dry.stdout).toContain(`${mediaDir}: 1 orphan (1 byte) to delete`)
        expect(yield* keysUnder(s3, "appexec/executions/")).toEqual(all)
        expect(existsSync(join(mediaDir, fileOrphan))).toBe(true)

        const swept = yield* admin(["media", "sweep", "--data", dataDir, "--min-age", "10s"], s3.env)
        expect(swept.code, swept.stderr).toBe(0)
        expect(swept.stdout).toContain(`deleted\t${keyOf(orphanUrl)}\t`)
        expect(swept.stdout).toContain(`deleted\t${fileOrphan}\t1\texecution`)
        expect(yield* keysUnder(s3, "appexec/executions/")).toEqual(
          [keyOf(liveUrl), recentKey].map((key) => `appexec/${key}`).sort()
        )
        expect(existsSync(join(mediaDir, fileOrphan))).toBe(false)
        const live = yield* download(liveUrl)
        expect([live.status, live.type]).toEqual([200, "image/png"])
      }).pipe(Effect.scoped),
    180_000
  )
})
