/**
 * A real S3-protocol server for tests: `s3rver` on 127.0.0.1, port 0, over a temp directory,
 * with one empty bucket. It accepts the SDK's requests signed with the access key `S3RVER`
 * (secret `S3RVER`) and does not check SigV4 signatures, so presigned-URL tampering is tested on
 * the instance's own media route instead. `env` is what a process needs to reach it through the
 * SDK's default chain.
 */
import { S3Client } from "@aws-sdk/client-s3"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"

const bin = createRequire(import.meta.url).resolve("s3rver/bin/s3rver.js")

/** The credentials s3rver knows. */
export const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }

/** A running s3rver. */
export interface Running {
  readonly endpoint: string
  readonly bucket: string
  /** The environment of a process that reaches it through the SDK's default chain. */
  readonly env: Record<string, string>
  /** A client of it, for what tests check in the bucket. */
  readonly client: S3Client
}

/**
 * Starts s3rver with the bucket `bucket`; stopped, its directory removed, with the scope. It runs
 * as a process of its own under `--openssl-legacy-provider`: it makes its list continuation
 * tokens with DES, which OpenSSL 3 has only there.
 */
export const start = (bucket = "appexec-media") =>
  Effect.acquireRelease(
    Effect.async<{ readonly child: ChildProcess; readonly directory: string; readonly running: Running }, Error>(
      (resume) => {
        const directory = mkdtempSync(join(tmpdir(), "appexec-s3rver-"))
        const child = spawn(
          process.execPath,
          [
            "--openssl-legacy-provider",
            bin,
            "-d",
            directory,
            "-a",
            "127.0.0.1",
            "-p",
            "0",
            "--silent",
            "--configure-bucket",
            bucket
          ],
          { stdio: ["ignore", "pipe", "pipe"] }
        )
        let output = ""
        const onData = (data: Buffer) => {
          output += String(data)
          const port = /S3rver listening on 127\.0\.0\.1:(\d+)/.exec(output)?.[1]
          if (port === undefined) return
          child.stdout.off("data", onData)
          const endpoint = `http://127.0.0.1:${port}`
          const client = new S3Client({
            endpoint,
            region: "us-east-1",
            forcePathStyle: true,
            credentials,
            requestChecksumCalculation: "WHEN_REQUIRED",
            responseChecksumValidation: "WHEN_REQUIRED"
          })
          const env = {
            AWS_ACCESS_KEY_ID: credentials.accessKeyId,
            AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
            AWS_REGION: "us-east-1"
          }
          resume(Effect.succeed({ child, directory, running: { endpoint, bucket, env, client } }))
        }
        child.stdout.on("data", onData)
        child.stderr.on("data", (data) => (output += String(data)))
        child.once("exit", (code) => resume(Effect.fail(new Error(`s3rver exited (${code}): ${output}`))))
      }
    ).pipe(
      Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("s3rver did not start") }),
      Effect.orDie
    ),
    ({ child, directory, running }) =>
      Effect.async<void>((resume) => {
        running.client.destroy()
        child.once("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      }).pipe(Effect.ensuring(Effect.sync(() => rmSync(directory, { recursive: true, force: true }))))
  ).pipe(Effect.map(({ running }) => running))
