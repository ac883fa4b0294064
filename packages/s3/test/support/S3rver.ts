/**
 * A real S3-protocol server for tests: `TestS3rver` (s3rver on 127.0.0.1, port 0, one empty
 * bucket) with an SDK client of it. s3rver does not check SigV4 signatures, so presigned-URL
 * tampering is tested on the instance's own media route instead. `env` is what a process needs
 * to reach it through the SDK's default chain.
 */
import { TestS3rver } from "@appexec/testing"
import { S3Client } from "@aws-sdk/client-s3"
import { Effect } from "effect"

/** The credentials s3rver knows. */
export const credentials = TestS3rver.credentials

/** A running s3rver. */
export interface Running extends TestS3rver.Running {
  /** A client of it, for what tests check in the bucket. */
  readonly client: S3Client
}

/** Starts s3rver with the bucket `bucket`; stopped, its directory removed, its client destroyed, with the scope. */
export const start = (bucket = "appexec-media") =>
  Effect.gen(function*() {
    const running = yield* Effect.orDie(TestS3rver.start(bucket))
    const client = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new S3Client({
          endpoint: running.endpoint,
          region: "us-east-1",
          forcePathStyle: true,
          credentials,
          requestChecksumCalculation: "WHEN_REQUIRED",
          responseChecksumValidation: "WHEN_REQUIRED"
        })
      ),
      (client) => Effect.sync(() => client.destroy())
    )
    return { ...running, client } satisfies Running
  })
