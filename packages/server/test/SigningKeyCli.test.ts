/**
 * Webhook settings of the `appexec` command, as a user runs it: `serve` takes the signing key
 * (JWK), `--allow-private-networks` and `--webhook-retry-delays` into effect, and
 * `appexec signing-key rotate`, run beside it on the same data directory, prints only the new
 * `kid`, which `GET /v1/webhooks/signing-key` then publishes before the previous key; on SQLite
 * and on PostgreSQL.
 */
import { TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Schedule } from "effect"
import { execFile, spawn } from "node:child_process"
import { createHash, generateKeyPairSync } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { backends } from "./support/Backends.js"
import { bin } from "./support/Bin.js"

/** Runs `appexec …args` with `env` added to the environment to completion; stdout, stderr and exit code. */
const appexecIn = (env: Record<string, string>) => (...args: Array<string>) =>
  Effect.async<{ stdout: string; stderr: string; code: number }>((resume) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, APPEXEC_LOG_FORMAT: "json", ...env } },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ stdout, stderr, code: error === null ? 0 : Number(error.code ?? 1) }))
    )
  })

const appexec = appexecIn({})

/** A running `serve`; resolves with the printed key and base URL once it has started. */
const startServe = (dataDir: string, args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.gen(function*() {
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [bin, "serve", "--port", "0", "--data", dataDir, "--rate-limit", "1000", ...args], {
          env: { ...process.env, APPEXEC_LOG_FORMAT: "json", ...env }
        })
      ),
      (child) =>
        Effect.sync(() => {
          if (child.exitCode === null) child.kill("SIGKILL")
        })
    )
    const output = { stdout: "", stderr: "" }
    const started = yield* Deferred.make<{ readonly key: string; readonly baseUrl: string }, Error>()
    child.stdout.on("data", (d) => {
      output.stdout += String(d)
      const match = /curl -H 'x-api-key: (aex_[A-Za-z0-9_-]{43})' (http:\/\/127\.0\.0\.1:\d+)\/v1\/apps/.exec(
        output.stdout
      )
      if (match !== null) Deferred.unsafeDone(started, Effect.succeed({ key: match[1]!, baseUrl: match[2]! }))
    })
    child.stderr.on("data", (d) => (output.stderr += String(d)))
    child.once(
      "exit",
      (code) => Deferred.unsafeDone(started, Effect.fail(new Error(`serve exited with ${code}: ${output.stderr}`)))
    )
    return yield* Deferred.await(started).pipe(
      Effect.timeoutFail({
        duration: "30 seconds",
        onTimeout: () => new Error(`serve did not start: ${output.stderr}`)
      })
    )
  })

/** A receiver on 127.0.0.1 that answers 500 to its first request and 200 to the others. */
const startReceiver = Effect.gen(function*() {
  let count = 0
  const receiver = yield* TestReceiver.start(() => (++count === 1 ? 500 : 200))
  const waitFor = (count: number) =>
    Effect.sync(() => receiver.received.length >= count).pipe(
      Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (done) => done }),
      Effect.timeoutFail({
        duration: "15 seconds",
        onTimeout: () => new Error(`${count} webhook requests did not arrive`)
      })
    )
  return { url: receiver.url(), arrivals: receiver.received, waitFor }
})

/** Checks a request's signature with node:crypto alone against a public JWK. */
const verifiedWith = (x: string, arrival: TestReceiver.Received) =>
  TestReceiver.verifiedByNodeCrypto([{ kty: "OKP", crv: "Ed25519", x }], arrival)

const rfc7638 = (x: string) =>
  createHash("sha256").update(JSON.stringify({ crv: "Ed25519", kty: "OKP", x })).digest("base64url")

const getJson = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    // The bodies' shapes are the API's, tested in @appexec/http; only the fields used are read here.
    return { status: response.status, body: (await response.json()) as any }
  })

describe("appexec webhook settings and signing-key rotate", () => {
  for (const backend of backends) {
    it.scopedLive(
      `serve on ${backend.name} applies the configured JWK, private networks and retry delays; rotate beside it publishes a second key`,
      () =>
        Effect.gen(function*() {
          const env = yield* backend.env
          const appexec = appexecIn(env)
          const dataDir = yield* Effect.acquireRelease(
            Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-signing-"))),
            (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
          )
          const jwk = generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" })
          const configuredKid = rfc7638(jwk.x!)
          const receiver = yield* startReceiver
          const { key, baseUrl } = yield* startServe(dataDir, [
            "--allow-private-networks",
            "--webhook-retry-delays",
            "1s,1s",
            "--signing-key-jwk",
            JSON.stringify({ kty: jwk.kty, crv: jwk.crv, d: jwk.d })
          ], env)
          const auth = { headers: { "x-api-key": key } }
          const published = () => getJson(`${baseUrl}/v1/webhooks/signing-key`, auth)
          expect((yield* published()).body.keys.map((k: { kid: string }) => k.kid)).toEqual([configuredKid])

          const greeting = (yield* getJson(`${baseUrl}/v1/apps`, auth)).body.data.find((a: { name: string }) =>
            a.name === "Greeting"
          )
          const start = getJson(
            `${baseUrl}/v1/apps/${greeting.appId}/executions?webhook=${encodeURIComponent(receiver.url)}`,
            {
              method: "POST",
              headers: { "x-api-key": key, "content-type": "application/json" },
              body: JSON.stringify({ inputs: { who: "Ann" } })
            }
          )
          expect((yield* start).status).toBe(202)
          // A loopback receiver is reached only with --allow-private-networks; the retry after the
          // 500 comes after 1 s, not the default 5 s.
          yield* receiver.waitFor(2)
          const [failed, retried] = receiver.arrivals
          expect(retried!.at - failed!.at).toBeGreaterThanOrEqual(900)
          expect(retried!.at - failed!.at).toBeLessThan(4_000)
          for (const arrival of [failed!, retried!]) {
            expect(arrival.headers["x-service-webhook-key-id"]).toBe(configuredKid)
            expect(verifiedWith(jwk.x!, arrival)).toBe(true)
          }

          const rotated = yield* appexec("signing-key", "rotate", "--grace", "1h", "--data", dataDir)
          expect(rotated.code).toBe(0)
          expect(rotated.stdout).toMatch(/^[A-Za-z0-9_-]{43}\n$/)
          const newKid = rotated.stdout.trim()
          expect(newKid).not.toBe(configuredKid)
          const keys: Array<{ kid: string; x: string }> = (yield* published()).body.keys
          expect(keys.map((k) => k.kid)).toEqual([newKid, configuredKid])

          // The running server signs with the new key from now on.
          expect((yield* start).status).toBe(202)
          yield* receiver.waitFor(3)
          const afterRotation = receiver.arrivals[2]!
          expect(afterRotation.headers["x-service-webhook-key-id"]).toBe(newKid)
          expect(verifiedWith(keys[0]!.x, afterRotation)).toBe(true)
          expect(verifiedWith(jwk.x!, afterRotation)).toBe(false)
        }),
      60_000
    )
  }

  it.scoped(
    "signing-key rotate refuses a malformed --grace and prints nothing on stdout",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* Effect.acquireRelease(
          Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-signing-"))),
          (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
        )
        const result = yield* appexec("signing-key", "rotate", "--grace", "soon", "--data", dataDir)
        expect(result.code).not.toBe(0)
        expect(result.stdout).toBe("")
        expect(result.stderr).toContain("--grace: 'soon' is not a duration")
      }),
    30_000
  )
})
