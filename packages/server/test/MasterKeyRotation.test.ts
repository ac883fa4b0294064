/**
 * A change of master key under a running fleet on PostgreSQL, as docs/secrets.md tells it: one
 * API process and two workers run executions that read a secret (`http.request` with a bearer
 * token from `appexec secrets set`) and send signed webhooks, without a pause, while every
 * process is restarted one at a time through the phases — (1) the new key as a next key, (2) the
 * new key current and the old one previous, then `appexec master-key reseal`, (3) the new key
 * alone. No execution fails; every webhook is delivered with a valid signature, and no attempt of
 * any fails. And the one-step change the docs described before fails a worker still on the old
 * key, which is what the phases avoid.
 */
import { TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, Schedule } from "effect"
import { randomBytes } from "node:crypto"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { postgres, query } from "./support/Backends.js"
import { appexecWith } from "./support/Command.js"
import { appDefinition, echoServer, finished, signingKeys, start, TOKEN } from "./support/EchoToken.js"
import { spawnAppexec, tempDataDir } from "./support/ServeProcess.js"

const key = () => randomBytes(32).toString("base64url")

/** The environment of each phase of the change from `old` to `next`. */
const phases = (old: string, next: string) => ({
  before: { APPEXEC_MASTER_KEY: old },
  learn: { APPEXEC_MASTER_KEY: old, APPEXEC_MASTER_KEY_NEXT: next },
  switch: { APPEXEC_MASTER_KEY: next, APPEXEC_MASTER_KEY_PREVIOUS: old },
  after: { APPEXEC_MASTER_KEY: next }
})

/** A fleet on one database: an API process and workers, each restartable with another environment. */
const fleet = (data: string, database: Record<string, string>) => {
  const startWorker = (env: Record<string, string>) =>
    Effect.tap(
      spawnAppexec(["worker", "--concurrency", "2", "--allow-private-networks", "--data", data], {
        ...database,
        ...env
      }),
      (worker) => worker.waitFor(/appexec worker is running/, "stderr", "60 seconds")
    )
  const startApi = (env: Record<string, string>) =>
    Effect.gen(function*() {
      const api = yield* spawnAppexec([
        "serve",
        "--no-worker",
        "--no-console",
        "--port",
        "0",
        "--rate-limit",
        "100000",
        "--allow-private-networks",
        "--data",
        data
      ], { ...database, ...env })
      const [, url] = yield* api.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, "stderr", "60 seconds")
      return { ...api, url: url! }
    })
  /** Stops a process as an orchestrator does (SIGTERM: it drains), and waits for its exit. */
  const stop = (process: {
    readonly child: { kill: (signal: NodeJS.Signals) => boolean }
    readonly exited: (within: Duration.DurationInput) => Effect.Effect<unknown, Error>
  }) => Effect.zipRight(Effect.sync(() => process.child.kill("SIGTERM")), process.exited("60 seconds"))
  return { startWorker, startApi, stop }
}

describe("changing the master key under a running fleet (PostgreSQL)", () => {
  it.scopedLive(
    "two workers and an API restarted through the phases: no execution and no webhook fails",
    () =>
      Effect.gen(function*() {
        const data = yield* tempDataDir
        const { APPEXEC_DATABASE_URL } = yield* postgres.env
        const database = { APPEXEC_DATABASE_URL: APPEXEC_DATABASE_URL! }
        const env = phases(key(), key())
        const echo = yield* echoServer
        const receiver = yield* TestReceiver.start()
        const { startApi, startWorker, stop } = fleet(data, database)

        let api = yield* startApi(env.before)
        const [, apiKey] = yield* api.waitFor(/API key of workspace "default" \(shown once, keep it\): (\S+)/, "stdout")
        const definition = join(data, "echo.json")
        writeFileSync(definition, JSON.stringify(appDefinition(echo)))
        const admin = (phase: Record<string, string>, input: string, ...args: Array<string>) =>
          appexecWith({ ...database, ...phase }, input, ...args, "--data", data)
        const imported = yield* admin(env.before, "", "apps", "import", definition, "--public")
        expect(imported.code, imported.stderr).toBe(0)
        const appId = imported.stdout.trim()
        expect((yield* admin(env.before, TOKEN, "secrets", "set", "ECHO_TOKEN")).code).toBe(0)
        const workers = [yield* startWorker(env.before), yield* startWorker(env.before)]

        // Starts executions without a pause, at the API of the moment (a start that meets the API
        // restarting is tried again).
        const started: Array<{ readonly id: string; readonly who: string }> = []
        const startOne = Effect.suspend(() => {
          const who = `w${started.length}`
          return start(api.url, apiKey!, appId, { who }, receiver.url()).pipe(
            Effect.map((id) => void started.push({ id, who }))
          )
        }).pipe(Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("30 seconds"))))
        const driver = yield* Effect.fork(Effect.repeat(startOne, Schedule.spaced("40 millis")))

        /** Restarts every process with `phase`, one at a time, the workers first. */
        const restartAll = (phase: Record<string, string>) =>
          Effect.gen(function*() {
            for (const [i, worker] of workers.entries()) {
              yield* stop(worker)
              workers[i] = yield* startWorker(phase)
            }
            yield* stop(api)
            api = yield* startApi(phase)
          })

        yield* restartAll(env.learn)
        yield* restartAll(env.switch)
        const resealed = yield* admin(env.switch, "", "master-key", "reseal")
        expect(resealed.code, resealed.stderr).toBe(0)
        expect(resealed.stdout).toBe(
          "secrets: 1 sealed with the current master key\n" +
            "signing keys: 1 sealed with the current master key\n" +
            "no value is sealed with a previous master key: APPEXEC_MASTER_KEY_PREVIOUS may be dropped\n"
        )
        yield* restartAll(env.after)
        yield* Fiber.interrupt(driver)
        expect(started.length).toBeGreaterThan(20)

        // Every execution completed with its answer, read with the secret.
        for (const { id, who } of started) {
          const execution = yield* finished(api.url, apiKey!, id)
          expect({ id, status: execution.status, error: execution.errorMessage }).toEqual({
            id,
            status: "completed",
            error: null
          })
          expect(execution.outputs[0]!.value).toBe(who)
        }
        // Every webhook delivered at its first attempt, signed with the published key.
        const keys = yield* signingKeys(api.url, apiKey!)
        const undelivered = () => started.filter(({ id }) => receiver.of(id).length === 0).map(({ id }) => id)
        // A stopping worker sends the webhooks it claimed before it exits: none waits for a claim to
        // run out.
        yield* Effect.suspend(() => undelivered().length === 0 ? Effect.void : Effect.fail("waiting")).pipe(
          Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("20 seconds"))),
          Effect.catchAll(() =>
            Effect.flatMap(
              query(
                database,
                "SELECT execution_id, status, attempts FROM webhook_outbox WHERE execution_id = ANY($1)",
                [
                  undelivered()
                ]
              ),
              (rows) => Effect.fail(new Error(`not delivered: ${JSON.stringify(rows)}`))
            )
          )
        )
        // At least once (a worker stopped between sending and recording an attempt sends it again
        // after its claim runs out), and every request signed with the published key.
        for (const { id } of started) {
          expect(receiver.of(id).length).toBeGreaterThanOrEqual(1)
          for (const request of receiver.of(id)) expect(TestReceiver.verifiedByNodeCrypto(keys, request)).toBe(true)
        }
        const twice = started.filter(({ id }) => receiver.of(id).length > 1)
        yield* Effect.logInfo(`webhooks sent twice: ${twice.length} of ${started.length}`)
        // A start whose answer was lost while its API restarted was tried again: the first one's
        // execution runs too, unknown to this test. The known ones have one delivery each.
        const attempts = yield* query<{ execution_id: string; attempts: Array<{ statusCode: number | null }> }>(
          database,
          "SELECT execution_id, attempts FROM webhook_outbox WHERE execution_id = ANY($1)",
          [started.map(({ id }) => id)]
        )
        expect(attempts).toHaveLength(started.length)
        // No attempt failed: none was recorded but a delivered one.
        for (const row of attempts) expect(row.attempts.map((a) => a.statusCode), row.execution_id).toEqual([200])
      }),
    300_000
  )

  it.scopedLive(
    "the one-step change fails a worker still on the old key: what the phases avoid",
    () =>
      Effect.gen(function*() {
        const data = yield* tempDataDir
        const { APPEXEC_DATABASE_URL } = yield* postgres.env
        const database = { APPEXEC_DATABASE_URL: APPEXEC_DATABASE_URL! }
        const env = phases(key(), key())
        const echo = yield* echoServer
        const { startApi, startWorker, stop } = fleet(data, database)
        const api = yield* startApi(env.before)
        const [, apiKey] = yield* api.waitFor(/API key of workspace "default" \(shown once, keep it\): (\S+)/, "stdout")
        const definition = join(data, "echo.json")
        writeFileSync(definition, JSON.stringify(appDefinition(echo)))
        const admin = (phase: Record<string, string>, input: string, ...args: Array<string>) =>
          appexecWith({ ...database, ...phase }, input, ...args, "--data", data)
        const appId = (yield* admin(env.before, "", "apps", "import", definition, "--public")).stdout.trim()
        expect((yield* admin(env.before, TOKEN, "secrets", "set", "ECHO_TOKEN")).code).toBe(0)
        yield* startWorker(env.before)
        // The new key with the old one as previous, at once, while the worker still has only the old.
        yield* stop(yield* startApi(env.switch))
        const execution = yield* finished(api.url, apiKey!, yield* start(api.url, apiKey!, appId, { who: "late" }))
        expect(execution).toMatchObject({
          status: "failed",
          errorMessage: expect.stringMatching(/ECHO_TOKEN could not be read/)
        })
      }),
    120_000
  )
})
