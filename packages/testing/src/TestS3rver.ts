/**
 * A real S3-protocol server for tests and benchmarks: `s3rver` on 127.0.0.1, port 0, over a temp
 * directory, with one empty bucket. It accepts requests signed with the access key `S3RVER`
 * (secret `S3RVER`) and does not check SigV4 signatures. `env` is what a process needs to reach
 * it through the AWS SDK's default chain. `s3rver` is an optional peer dependency (install it
 * beside this package to use this module): it is resolved when a server starts, not when this
 * module loads, and a missing one fails the start with a message that says so.
 */
import { Effect, type Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** The credentials s3rver knows. */
export const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }

/** A running s3rver. */
export interface Running {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string
  readonly bucket: string
  /** The environment of a process that reaches it through the SDK's default chain. */
  readonly env: Record<string, string>
}

/**
 * Starts s3rver with the bucket `bucket`; stopped, its directory removed, with the scope. It runs
 * as a process of its own under `--openssl-legacy-provider`: it makes its list continuation
 * tokens with DES, which OpenSSL 3 has only there. Fails when it exits or has not started in 20 s.
 */
export const start = (bucket = "appexec-media"): Effect.Effect<Running, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ readonly child: ChildProcess; readonly directory: string; readonly running: Running }, Error>(
      (resume) => {
        let bin: string
        try {
          bin = createRequire(import.meta.url).resolve("s3rver/bin/s3rver.js")
        } catch {
          return resume(
            Effect.fail(new Error("TestS3rver needs the s3rver package: npm install --save-dev s3rver@3"))
          )
        }
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
          const env = {
            AWS_ACCESS_KEY_ID: credentials.accessKeyId,
            AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
            AWS_REGION: "us-east-1"
          }
          resume(Effect.succeed({ child, directory, running: { endpoint: `http://127.0.0.1:${port}`, bucket, env } }))
        }
        child.stdout.on("data", onData)
        child.stderr.on("data", (data) => (output += String(data)))
        child.once("exit", (code) => {
          rmSync(directory, { recursive: true, force: true })
          resume(Effect.fail(new Error(`s3rver exited (${code}): ${output}`)))
        })
        // Given up before it started (the time limit, an interrupted test): the process goes too.
        return Effect.sync(() => {
          child.kill("SIGTERM")
        })
      }
    ).pipe(Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("s3rver did not start") })),
    ({ child, directory }) =>
      Effect.async<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
        child.once("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      }).pipe(Effect.ensuring(Effect.sync(() => rmSync(directory, { recursive: true, force: true }))))
  ).pipe(Effect.map(({ running }) => running))
