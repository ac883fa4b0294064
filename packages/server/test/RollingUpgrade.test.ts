/**
 * The guarantee of docs/upgrading.md, with the previous release's own build (`PreviousRelease`):
 * on SQLite and on PostgreSQL, the previous release bootstraps the database and serves; this
 * release's `appexec migrate` brings the schema up to date beside its running API and worker;
 * then the two run together both ways round — a new API with the old worker, the old API with a
 * new worker — and each execution completes, its webhook delivered with a valid signature.
 */
import { TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { backends } from "./support/Backends.js"
import { appexecIn } from "./support/Command.js"
import { finished, signingKeys, start } from "./support/EchoToken.js"
import { previousBin } from "./support/PreviousRelease.js"
import { spawnAppexec, tempDataDir } from "./support/ServeProcess.js"

for (const backend of backends) {
  describe(`a rolling upgrade from the previous release (${backend.name})`, () => {
    it.scopedLive(
      "old and new processes run together on the migrated schema, both ways round",
      () =>
        Effect.gen(function*() {
          const old = yield* previousBin
          const data = yield* tempDataDir
          const env = yield* backend.env
          const receiver = yield* TestReceiver.start()
          const apiArgs = [
            "serve",
            "--no-worker",
            "--no-console",
            "--port",
            "0",
            "--allow-private-networks",
            "--data",
            data
          ]
          const workerArgs = ["worker", "--allow-private-networks", "--data", data]
          const listening = /listening on (http:\/\/127\.0\.0\.1:\d+)/

          const oldApi = yield* spawnAppexec(apiArgs, env, { program: old })
          const [, key] = yield* oldApi.waitFor(
            /API key of workspace "default" \(shown once, keep it\): (\S+)/,
            "stdout"
          )
          const [, oldUrl] = yield* oldApi.waitFor(listening, "stdout")
          // An old worker running when the migration is applied goes on (one started after it
          // would be refused: docs/upgrading.md).
          const oldWorker = yield* spawnAppexec(workerArgs, env, { program: old })
          // The previous release prints its start-up lines on stdout.
          yield* oldWorker.waitFor(/appexec worker is running/, "stdout", "60 seconds")
          const migrated = yield* appexecIn(env)("migrate", "--data", data)
          expect(migrated.code, migrated.stderr).toBe(0)
          const greeting = (yield* appexecIn(env)("apps", "list", "--data", data)).stdout.split("\n")
            .find((line) => line.endsWith("\tGreeting"))!.split("\t")[0]!

          /** One execution through `url`, run by whichever worker runs: completed, its webhook signed. */
          const runsThrough = (url: string, who: string) =>
            Effect.gen(function*() {
              const done = yield* finished(url, key!, yield* start(url, key!, greeting, { who }, receiver.url()))
              expect(done.status).toBe("completed")
              const webhook = yield* receiver.next
              expect(webhook.executionId).toBe(done.executionId)
              expect(TestReceiver.verifiedByNodeCrypto(yield* signingKeys(url, key!), webhook)).toBe(true)
            })

          // The new API, the old worker.
          const newApi = yield* spawnAppexec(apiArgs, env)
          const [, newUrl] = yield* newApi.waitFor(listening, "stderr")
          yield* runsThrough(newUrl!, "new API, old worker")
          oldWorker.child.kill("SIGTERM")
          yield* oldWorker.exited("30 seconds")

          // The old API, a new worker.
          const newWorker = yield* spawnAppexec(workerArgs, env)
          yield* newWorker.waitFor(/appexec worker is running/, "stderr", "60 seconds")
          yield* runsThrough(oldUrl!, "old API, new worker")
        }),
      240_000
    )
  })
}
