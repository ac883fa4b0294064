/**
 * The operator views of the admin app (`AdminHttp.withOperator`, docs/operations.md#operator-views)
 * over a real socket on 127.0.0.1: each workspace's queued and running executions, the last hour's
 * throughput and failure rate, the workers through their leases, the failed deliveries across
 * workspaces; read-only by default (redelivery answers 403 and says how to allow it), and with
 * actions a redelivery that reaches a real receiver again, taken only from the port's own page
 * with its anti-forgery token (each way a page of another site could post refused 403); the
 * console's operator page at `/console`, where `/` leads. Metrics and health answer as before.
 */
import { Appexec } from "@appexec/core"
import { TestHarness, TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { request as httpRequest } from "node:http"
import * as AdminHost from "../src/internal/AdminHost.js"
import { eventually, seed, serveOperator, slowApp } from "./fixtures.js"

/** A request to the admin app: status, headers and body (JSON when it is). */
const call = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { redirect: "manual", ...init })
    const text = await response.text()
    const json = response.headers.get("content-type")?.includes("json") === true
    return { status: response.status, headers: response.headers, body: json ? JSON.parse(text) as unknown : text }
  })

/** A GET sent with `host` as its `Host` (which `fetch` does not let a caller set): status, body as JSON or text. */
const getWithHost = (url: string, host: string) =>
  Effect.async<{ readonly status: number; readonly body: unknown }>((resume) => {
    const request = httpRequest(url, { headers: { host } }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        const json = response.headers["content-type"]?.includes("json") === true
        resume(Effect.succeed({ status: response.statusCode ?? 0, body: json ? JSON.parse(text) as unknown : text }))
      })
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end()
  })

const dataOf = <A>(answer: { readonly body: unknown }) => (answer.body as { readonly data: A }).data
const errorOf = (answer: { readonly body: unknown }) =>
  (answer.body as { readonly error: { readonly code: string; readonly message: string } }).error

/** Starts `appId` for `key` through the facade. */
const start = (key: string, appId: string, prompt: string, webhook?: string) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
    const started = yield* appexec.executions.start(
      principal,
      appId,
      { prompt },
      webhook === undefined ? {} : {
        webhook
      }
    )
    return started.executionId
  })

/** One worker slot, one attempt per delivery: a failed delivery fails for good at once. */
const harness = TestHarness.layer({ webhooks: true, config: { workerConcurrency: 1, webhookRetryDelays: [] } })

describe("the admin app's operator views", () => {
  it.scoped("shows queues, throughput, workers and failed deliveries, read-only by default", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start(() => 500)
      const url = yield* serveOperator({})
      const { alice, bob, echo } = yield* seed
      const appexec = yield* Appexec.Appexec
      const slow = yield* appexec.apps.import(slowApp, { owner: { public: true } })

      // Alice: two that complete (one whose webhook fails), then a slow one that runs and one that waits for
      // it (one worker slot); Bob: one that completes, and none open.
      const hooked = yield* start(alice.key, echo.appId, "hooked", receiver.url())
      yield* appexec.executions.await(hooked)
      yield* appexec.executions.await(yield* start(alice.key, echo.appId, "plain"))
      yield* appexec.executions.await(yield* start(bob.key, echo.appId, "done"))
      yield* receiver.next
      yield* eventually(
        "the delivery did not fail",
        Effect.map(call(`${url}/operator/deliveries`), (answer) => dataOf<Array<unknown>>(answer).length === 1)
      )
      yield* start(alice.key, slow.appId, "runs")
      yield* start(alice.key, slow.appId, "waits")
      yield* eventually(
        "the slow run did not start",
        Effect.map(call(`${url}/operator/workers`), (answer) => dataOf<Array<unknown>>(answer).length === 1)
      )

      expect(dataOf(yield* call(`${url}/operator`))).toEqual({ actions: false })
      // Memory holds no workspace names (the SQL storages answer them: OperatorViewsContract).
      expect(dataOf(yield* call(`${url}/operator/workspaces`))).toEqual([
        { workspaceId: alice.workspaceId, name: null, queued: 1, running: 1 }
      ])

      const throughput = dataOf<{
        completed: number
        failed: number
        failureRate: number | null
        since: string
        until: string
        minutes: Array<{ at: string; completed: number; failed: number }>
      }>(yield* call(`${url}/operator/throughput`))
      expect(throughput).toMatchObject({
        completed: 3,
        failed: 0,
        failureRate: 0,
        // The hour that ends with the current minute (the test clock's first).
        since: "1969-12-31T23:01:00.000Z",
        until: "1970-01-01T00:01:00.000Z"
      })
      expect(throughput.minutes).toHaveLength(60)
      expect(throughput.minutes[59]).toEqual({ at: "1970-01-01T00:00:00.000Z", completed: 3, failed: 0 })
      expect(throughput.minutes.slice(0, 59).every((m) => m.completed === 0 && m.failed === 0)).toBe(true)

      const workers = dataOf<Array<{ held: number; lastHeartbeatAt: string; leaseExpiresAt: string; live: boolean }>>(
        yield* call(`${url}/operator/workers`)
      )
      // A lease of 30 s, taken now: the last heartbeat is the claim.
      expect(workers).toEqual([{
        workerId: expect.any(String),
        held: 1,
        lastHeartbeatAt: "1970-01-01T00:00:00.000Z",
        leaseExpiresAt: "1970-01-01T00:00:30.000Z",
        live: true
      }])

      const deliveries = dataOf<Array<Record<string, unknown>>>(yield* call(`${url}/operator/deliveries`))
      expect(deliveries).toEqual([expect.objectContaining({
        executionId: hooked,
        workspaceId: alice.workspaceId,
        appId: echo.appId,
        url: receiver.url(),
        lastStatusCode: 500,
        attempts: [expect.objectContaining({ statusCode: 500 })]
      })])

      // Read-only: the redelivery is refused, saying how to allow it; nothing is sent.
      const refused = yield* call(`${url}/operator/executions/${hooked}/webhook/redeliver`, { method: "POST" })
      expect(refused.status).toBe(403)
      expect(errorOf(refused)).toMatchObject({ code: "forbidden" })
      expect(errorOf(refused).message).toContain("--admin-actions")
      expect(receiver.received).toHaveLength(1)

      // Bad requests are said as such.
      const badLimit = yield* call(`${url}/operator/deliveries?limit=0`)
      expect(badLimit.status).toBe(400)
      expect(errorOf(badLimit).message).toContain("'limit'")
      expect((yield* call(`${url}/operator/workers`, { method: "DELETE" })).status).toBe(405)
      expect((yield* call(`${url}/operator/nothing`)).status).toBe(404)

      // The console's operator page, where the bare address leads; metrics and health as before.
      const home = yield* call(`${url}/`)
      expect(home.status).toBe(302)
      expect(home.headers.get("location")).toBe("/console")
      const page = yield* call(`${url}/console`)
      expect(page.status).toBe(200)
      expect(page.body).toContain(`<meta name="appexec-console-mode" content="operator">`)
      expect(page.headers.get("content-security-policy")).toContain("default-src 'self'")
      expect((yield* call(`${url}/metrics`)).body).toContain("appexec_queue_depth{scope=\"database\"} 1")
      expect((yield* call(`${url}/healthz`)).body).toEqual({ status: "ok" })
    }).pipe(Effect.provide(harness)))

  it.scoped("with actions, redelivers a failed delivery to the receiver; refuses another origin and what cannot be sent", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start((request) => (request.number === 1 ? 500 : 204))
      const url = yield* serveOperator({ actions: true, console: false })
      const { alice, echo } = yield* seed
      const appexec = yield* Appexec.Appexec
      const hooked = yield* start(alice.key, echo.appId, "hooked", receiver.url())
      yield* appexec.executions.await(hooked)
      yield* receiver.next
      yield* eventually(
        "the delivery did not fail",
        Effect.map(call(`${url}/operator/deliveries`), (answer) => dataOf<Array<unknown>>(answer).length === 1)
      )
      const { actionToken } = dataOf<{ actions: boolean; actionToken: string }>(yield* call(`${url}/operator`))
      expect(actionToken).toMatch(/^[A-Za-z0-9_-]{43}$/)
      const redeliver = (executionId: string, headers: Record<string, string> = {}) =>
        call(`${url}/operator/executions/${executionId}/webhook/redeliver`, {
          method: "POST",
          headers: { "x-appexec-action-token": actionToken, ...headers }
        })

      const foreign = yield* redeliver(hooked, { origin: "https://evil.example" })
      expect(foreign.status).toBe(403)
      expect(errorOf(foreign).message).toContain("another origin")

      const accepted = yield* redeliver(hooked, { origin: url })
      expect(accepted.status).toBe(202)
      expect(dataOf(accepted)).toMatchObject({ url: receiver.url(), status: "pending" })
      const second = yield* receiver.next
      expect(second.headers["x-service-webhook-request-id"]).toBe(hooked)
      yield* eventually(
        "the redelivery was not recorded",
        Effect.map(call(`${url}/operator/deliveries`), (answer) => dataOf<Array<unknown>>(answer).length === 0)
      )

      const plain = yield* start(alice.key, echo.appId, "no hook")
      yield* appexec.executions.await(plain)
      const none = yield* redeliver(plain)
      expect(none.status).toBe(409)
      expect(errorOf(none).code).toBe("webhook_not_redeliverable")
      const missing = yield* redeliver("00000000-0000-4000-8000-000000000000")
      expect(missing.status).toBe(404)
      expect((yield* call(`${url}/console`)).status).toBe(404)
    }).pipe(Effect.provide(harness)))

  it.scoped("answers only requests sent to its own address, localhost or an allowed name, against DNS rebinding", () =>
    Effect.gen(function*() {
      const url = yield* serveOperator({ allowedHosts: ["Admin.Internal"] })
      const port = new URL(url).port
      for (const path of ["/operator", "/operator/workspaces", "/console"]) {
        for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, "admin.internal:8443"]) {
          expect({ path, host, status: (yield* getWithHost(`${url}${path}`, host)).status }).toEqual({
            path,
            host,
            status: 200
          })
        }
        // A page of another site whose name now points here, the right address with another port or none, a malformed one.
        for (const host of [`evil.example:${port}`, `127.0.0.1:${Number(port) + 1}`, "127.0.0.1", "[::1"]) {
          const refused = yield* getWithHost(`${url}${path}`, host)
          expect({ path, host, status: refused.status }).toEqual({ path, host, status: 403 })
          expect(errorOf(refused)).toMatchObject({ code: "forbidden" })
          expect(errorOf(refused).message).toContain("--admin-allowed-hosts")
        }
      }
      expect((yield* getWithHost(`${url}/`, `evil.example:${port}`)).status).toBe(403)
      expect((yield* getWithHost(`${url}/`, `127.0.0.1:${port}`)).status).toBe(302)
      expect(dataOf(yield* getWithHost(`${url}/operator`, `127.0.0.1:${port}`))).toEqual({ actions: false })
      // The page itself, not only its data: its HTML reaches the operator, never the other site.
      expect(yield* getWithHost(`${url}/console`, `127.0.0.1:${port}`)).toMatchObject({
        body: expect.stringContaining("<!doctype html>")
      })
      // Metrics and health are not the operator views: a scraper may name the port as it likes.
      expect((yield* getWithHost(`${url}/healthz`, `scraper.example:${port}`)).status).toBe(200)
    }).pipe(Effect.provide(harness)))
})

/** A POST sent with exactly `headers` (and `Host`, which `fetch` does not let a caller set): status, body as JSON. */
const postWith = (url: string, headers: Record<string, string>) =>
  Effect.async<{ readonly status: number; readonly body: unknown }>((resume) => {
    const request = httpRequest(url, { method: "POST", headers }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => {
        resume(Effect.succeed({
          status: response.statusCode ?? 0,
          body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown
        }))
      })
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end()
  })

describe("the operator's actions, from the admin port's own page only", () => {
  it.scoped("refuses Origin null, another origin or site, a browser's request without Origin, and no or another token", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start((request) => (request.number === 1 ? 500 : 204))
      const url = yield* serveOperator({ actions: true, console: false })
      // A second admin listener of the same instance: its token is its own.
      const other = yield* serveOperator({ actions: true, console: false })
      const { alice, echo } = yield* seed
      const appexec = yield* Appexec.Appexec
      const hooked = yield* start(alice.key, echo.appId, "hooked", receiver.url())
      yield* appexec.executions.await(hooked)
      yield* receiver.next
      const attempts = Effect.map(
        call(`${url}/operator/deliveries`),
        (answer) => dataOf<Array<{ attempts: Array<unknown> }>>(answer).map((d) => d.attempts.length)
      )
      yield* eventually("the delivery did not fail", Effect.map(attempts, (counts) => counts[0] === 1))
      const tokenOf = (base: string) =>
        Effect.map(call(`${base}/operator`), (answer) => dataOf<{ actionToken: string }>(answer).actionToken)
      const token = yield* tokenOf(url)
      const otherToken = yield* tokenOf(other)
      expect(otherToken).not.toBe(token)
      const host = new URL(url).host
      const path = `${url}/operator/executions/${hooked}/webhook/redeliver`

      const refused: ReadonlyArray<readonly [string, Record<string, string>, string]> = [
        // A form posted from a sandboxed frame of another site.
        ["Origin: null", {
          origin: "null",
          "sec-fetch-site": "cross-site",
          "sec-fetch-mode": "navigate",
          "sec-fetch-dest": "iframe",
          "x-appexec-action-token": token
        }, "Sec-Fetch-Site"],
        ["Origin: null, no Sec-Fetch", { origin: "null", "x-appexec-action-token": token }, "Origin: null"],
        ["another origin", { origin: "https://evil.example", "x-appexec-action-token": token }, "another origin"],
        ["the admin port's name on another port", {
          origin: `http://127.0.0.1:${Number(new URL(url).port) + 1}`,
          "x-appexec-action-token": token
        }, "another origin"],
        ["a cross-site fetch", {
          origin: "http://localhost:1",
          "sec-fetch-site": "cross-site",
          "sec-fetch-mode": "no-cors",
          "sec-fetch-dest": "empty",
          "x-appexec-action-token": token
        }, "Sec-Fetch-Site"],
        ["a same-site fetch naming this origin", {
          origin: url,
          "sec-fetch-site": "same-site",
          "x-appexec-action-token": token
        }, "Sec-Fetch-Site"],
        ["a browser's request without Origin", {
          "sec-fetch-site": "same-origin",
          "sec-fetch-dest": "empty",
          "x-appexec-action-token": token
        }, "without an Origin"],
        ["this origin without the token", { origin: url }, "anti-forgery token"],
        [
          "this origin with a wrong token",
          { origin: url, "x-appexec-action-token": `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}` },
          "anti-forgery token"
        ],
        [
          "this origin with another listener's token",
          { origin: url, "x-appexec-action-token": otherToken },
          "anti-forgery token"
        ],
        ["no Origin and no token", {}, "anti-forgery token"]
      ]
      for (const [what, headers, says] of refused) {
        const answer = yield* postWith(path, { host, ...headers })
        expect({ what, status: answer.status }).toEqual({ what, status: 403 })
        expect({ what, error: errorOf(answer) }).toEqual({
          what,
          error: { code: "forbidden", message: expect.stringContaining(says) }
        })
      }
      // Nothing was sent, nothing was armed.
      expect(receiver.received).toHaveLength(1)
      expect(yield* attempts).toEqual([1])

      // The page's own request (Origin, or the browser's word behind a proxy that renames the
      // host), and a script's (no browser's headers) with the token: each taken, once the previous is over.
      const principal = yield* appexec.keys.authenticate({ "x-api-key": alice.key })
      const accepted: ReadonlyArray<Record<string, string>> = [
        { origin: url, "sec-fetch-site": "same-origin", "x-appexec-action-token": token },
        { origin: "https://ops.example", "sec-fetch-site": "same-origin", "x-appexec-action-token": token },
        { "x-appexec-action-token": token }
      ]
      for (const [i, headers] of accepted.entries()) {
        const answer = yield* postWith(path, { host, ...headers })
        expect({ headers, status: answer.status }).toEqual({ headers, status: 202 })
        yield* receiver.next
        yield* eventually(
          "the redelivery was not recorded",
          Effect.map(
            appexec.executions.webhook(principal, hooked),
            (delivery) => delivery?.status === "delivered" && delivery.attempts.length === i + 2
          )
        )
      }
      expect(receiver.received).toHaveLength(4)
    }).pipe(Effect.provide(harness)))
})

describe("the Host the operator views answer (AdminHost.allows)", () => {
  const none = AdminHost.allowedSet([])
  it("takes any IP address with the port on a wildcard address, names only when allowed", () => {
    for (const address of ["0.0.0.0", "::"]) {
      const bound = { address, port: 9090 }
      expect(AdminHost.allows("10.1.2.3:9090", bound, none)).toBe(true)
      expect(AdminHost.allows("[fd00::5]:9090", bound, none)).toBe(true)
      expect(AdminHost.allows("10.1.2.3:9091", bound, none)).toBe(false)
      expect(AdminHost.allows("evil.example:9090", bound, none)).toBe(false)
      expect(AdminHost.allows("admin.internal:9090", bound, AdminHost.allowedSet(["admin.internal:9090"]))).toBe(true)
      expect(AdminHost.allows("admin.internal:9091", bound, AdminHost.allowedSet(["admin.internal:9090"]))).toBe(false)
    }
  })
  it("takes a specific address and the loopback names, with the port 80 when the Host has none", () => {
    expect(AdminHost.allows("[::1]:9090", { address: "::1", port: 9090 }, none)).toBe(true)
    expect(AdminHost.allows("[fd00::5]:9090", { address: "fd00::5", port: 9090 }, none)).toBe(true)
    expect(AdminHost.allows("10.1.2.3:9090", { address: "10.1.2.4", port: 9090 }, none)).toBe(false)
    expect(AdminHost.allows("10.1.2.4", { address: "10.1.2.4", port: 80 }, none)).toBe(true)
    expect(AdminHost.allows("localhost:9090", undefined, none)).toBe(true)
    expect(AdminHost.allows("10.1.2.4:9090", undefined, none)).toBe(false)
    expect(AdminHost.allows(undefined, { address: "127.0.0.1", port: 9090 }, none)).toBe(false)
    expect(AdminHost.allows("localhost:x", { address: "127.0.0.1", port: 9090 }, none)).toBe(false)
  })
})
