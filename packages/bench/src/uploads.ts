/**
 * Upload benchmark (`npm run bench -- uploads`): how fast `POST /v1/uploads` takes files through
 * the compiled `appexec serve`, to the filesystem blob store under its data directory and to an
 * S3-compatible bucket (`--media s3://…` on a local s3rver). Each figure is the bytes of
 * `COUNT` uploads of 20 MiB, sent `CONCURRENCY` at a time over one keep-alive client, divided by
 * the time from the first request to the last answer (every answer must be 201).
 */
import { TestS3rver } from "@appexec/testing"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import type { Benchmark } from "./Benchmark.js"
import * as AppexecServer from "./servers/appexec.js"
import * as TempDir from "./TempDir.js"

const SIZE = 20 * 1024 * 1024
const COUNT = 12
const CONCURRENCY = 2

/** A file an upload takes as `image/png`: a PNG signature, then random bytes (only the start is sniffed). */
const file = (): Uint8Array<ArrayBuffer> => {
  const bytes = new Uint8Array(new ArrayBuffer(SIZE))
  bytes.set(randomBytes(SIZE))
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  return bytes
}

/** MB/s of `COUNT` uploads of `body` to `serve`, `CONCURRENCY` at a time. */
const throughput = (serve: AppexecServer.Serve, body: Uint8Array<ArrayBuffer>) =>
  Effect.promise(async () => {
    const send = async () => {
      const response = await fetch(`${serve.baseUrl}/v1/uploads`, {
        method: "POST",
        headers: { "x-api-key": serve.key, "content-type": "image/png" },
        body
      })
      const text = await response.text()
      if (response.status !== 201) throw new Error(`upload answered ${response.status}: ${text}`)
    }
    await send() // warm-up, not counted
    const started = performance.now()
    let left = COUNT
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) await send()
    }))
    const seconds = (performance.now() - started) / 1000
    return (COUNT * SIZE) / 1e6 / seconds
  })

export const benchmark: Benchmark = {
  name: "uploads",
  run: (report) =>
    Effect.gen(function*() {
      const body = file()
      const flags = ["--max-upload", "32MiB", "--rate-limit", "1000", "--no-console"]
      yield* Effect.scoped(Effect.gen(function*() {
        const data = yield* TempDir.make("uploads")
        const serve = yield* AppexecServer.serve(["--data", data, ...flags])
        yield* report({ name: "uploads 20 MiB to the file store", value: yield* throughput(serve, body), unit: "MB/s" })
      }))
      yield* Effect.scoped(Effect.gen(function*() {
        const bucket = "appexec-bench"
        const s3 = yield* TestS3rver.start(bucket)
        const data = yield* TempDir.make("uploads-s3")
        const serve = yield* AppexecServer.serve(
          ["--data", data, "--media", `s3://${bucket}/uploads-bench`, "--media-endpoint", s3.endpoint, ...flags],
          s3.env
        )
        yield* report({ name: "uploads 20 MiB to s3rver", value: yield* throughput(serve, body), unit: "MB/s" })
      }))
    })
}
