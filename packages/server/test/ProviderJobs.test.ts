/**
 * `provider.replicate` and `provider.fal` as an operator runs them: the compiled `appexec serve`
 * with the Replicate and fal example apps as shipped (their base URL pointed at local servers),
 * their tokens set with `appexec secrets set` while serve runs, and local
 * servers that speak Replicate's predictions API and fal's queue (`TestReplicateServer`,
 * `TestFalServer`, real sockets on 127.0.0.1; private networks allowed for them). A Replicate
 * run completes with its image stored and served, after a 429 retried as its `Retry-After` said,
 * which the execution's log (GET /v1/executions/{id}/logs) shows; a fal run canceled through the
 * API sends fal's cancel request; no token appears in any log line, command output or answer.
 */
import { TestFalServer, TestReplicateServer } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import sharp from "sharp"
import { bin } from "./support/Bin.js"
import { startServe, tempDataDir } from "./support/ServeProcess.js"

const REPLICATE_TOKEN = "r8_blackbox_5d1c9e70aa"
const FAL_KEY = "fal-blackbox-0e4b:77c2d1"

interface Ran {
  readonly stdout: string
  readonly stderr: string
  readonly code: number
}

/** `appexec …args` with `input` on stdin. */
const appexec = (input: string, ...args: Array<string>) =>
  Effect.async<Ran>((resume) => {
    const child = execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, APPEXEC_LOG_LEVEL: "debug" } },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ stdout, stderr, code: error === null ? 0 : Number(error.code ?? 1) }))
    )
    child.stdin!.end(input)
  })

/**
 * An example app of `packages/server/apps/providers/` as shipped, its provider node pointed at a
 * local server (`config` merged into the node of `type`).
 */
const exampleApp = (file: string, type: string, config: Record<string, unknown>) => {
  const definition = JSON.parse(readFileSync(new URL(`../apps/providers/${file}`, import.meta.url), "utf8")) as {
    nodes: Array<{ type: string; config?: Record<string, unknown> }>
  }
  const node = definition.nodes.find((n) => n.type === type)!
  node.config = { ...node.config, ...config }
  return definition
}

describe("provider jobs through appexec serve", () => {
  it.scopedLive(
    "Replicate: a run completes after a 429 retried; fal: a cancel reaches the provider; no token anywhere",
    () =>
      Effect.gen(function*() {
        const png = yield* Effect.promise(() =>
          sharp({ create: { width: 20, height: 12, channels: 3, background: "#2a6" } }).png().toBuffer()
        )
        const replicate = yield* TestReplicateServer.start({ token: REPLICATE_TOKEN, steps: 2, image: png })
        const fal = yield* TestFalServer.start({ key: FAL_KEY, steps: 1_000 })
        const dataDir = yield* tempDataDir
        const appsDir = yield* tempDataDir
        // The example apps as shipped but for their base URL, among the apps of the first start (so
        // that `secrets set`, which imports the shipped ones once their secret is set, finds them there).
        writeFileSync(
          join(appsDir, "replicate-image.json"),
          JSON.stringify(
            exampleApp("replicate-image.json", "provider.replicate", { baseUrl: replicate.baseUrl, waitSeconds: 1 })
          )
        )
        writeFileSync(
          join(appsDir, "fal-image.json"),
          JSON.stringify(exampleApp("fal-image.json", "provider.fal", { baseUrl: fal.baseUrl }))
        )
        const serve = yield* startServe(dataDir, ["--apps", appsDir, "--allow-private-networks"], {
          APPEXEC_LOG_LEVEL: "debug"
        })
        const cli: Array<Ran> = []
        for (const [name, value] of [["REPLICATE_API_TOKEN", REPLICATE_TOKEN], ["FAL_KEY", FAL_KEY]] as const) {
          const ran = yield* appexec(`${value}\n`, "secrets", "set", name, "--data", dataDir)
          cli.push(ran)
          expect(ran.code).toBe(0)
        }

        const headers = { "x-api-key": serve.key, "content-type": "application/json" }
        const answers: Array<string> = []
        const call = (path: string, init: RequestInit & { prefer?: string } = {}) =>
          Effect.promise(async () => {
            const response = await fetch(`${serve.baseUrl}${path}`, {
              ...init,
              headers: { ...headers, ...(init.prefer === undefined ? {} : { prefer: init.prefer }) }
            })
            const text = await response.text()
            answers.push(text)
            return { status: response.status, body: JSON.parse(text) as { data: Record<string, unknown> } }
          })
        const appIdOf = (name: string) =>
          Effect.map(
            call(`/v1/apps?search=${encodeURIComponent(name)}`),
            (apps) => String((apps.body.data as unknown as Array<{ appId: string }>)[0]!.appId)
          )
        const startRun = (appId: string, prompt: string) =>
          Effect.map(
            call(`/v1/apps/${appId}/executions`, { method: "POST", body: JSON.stringify({ inputs: { prompt } }) }),
            (started) => String(started.body.data.executionId)
          )
        const awaitEnd = (id: string) =>
          Effect.gen(function*() {
            let seen = yield* call(`/v1/executions/${id}`)
            while (seen.body.data.status === "queued" || seen.body.data.status === "running") {
              seen = yield* call(`/v1/executions/${id}`, { prefer: "wait=20" })
            }
            return seen.body.data
          })

        // Replicate: the create is throttled once (Retry-After: 1), then the prediction runs.
        replicate.script({
          status: 429,
          headers: { "retry-after": "1" },
          body: { title: "Request was throttled", detail: "Request was throttled.", status: 429 }
        })
        const replicateId = yield* startRun(yield* appIdOf("Replicate image"), "a lighthouse at dusk")
        const done = yield* awaitEnd(replicateId)
        expect(done.errorMessage ?? null).toBeNull()
        expect(done.status).toBe("completed")
        const outputs = done.outputs as Array<{ type: string; value: string }>
        expect(outputs[0]!.type).toBe("image")
        const image = yield* Effect.promise(() => fetch(outputs[0]!.value).then((r) => r.arrayBuffer()))
        expect(Buffer.from(image).equals(png)).toBe(true)
        expect(replicate.received.map((r) => `${r.method} ${r.path}`)).toEqual([
          "POST /v1/models/black-forest-labs/flux-schnell/predictions",
          "POST /v1/models/black-forest-labs/flux-schnell/predictions",
          "GET /v1/predictions/pred0001",
          "GET /v1/predictions/pred0001",
          "GET /files/0"
        ])
        expect(replicate.received[1]!.headers["authorization"]).toBe(`Bearer ${REPLICATE_TOKEN}`)
        expect(replicate.received[1]!.headers["prefer"]).toBe("wait=1")
        expect(replicate.received[1]!.json).toEqual({
          input: { prompt: "a lighthouse at dusk", aspect_ratio: "1:1", num_outputs: 1, output_format: "png" }
        })
        const logs = yield* call(`/v1/executions/${replicateId}/logs`)
        const lines = (logs.body.data as unknown as Array<{ message: string }>).map((l) => l.message)
        expect(lines).toContain(`POST ${replicate.host} answered 429; retry 1 of 4 in 1s`)
        expect(lines).toContain("prediction succeeded")

        // fal: a request that stays queued; the execution is canceled through the API.
        const falId = yield* startRun(yield* appIdOf("fal image"), "a red fox")
        let polled = yield* fal.next
        while (!polled.path.endsWith("/status")) polled = yield* fal.next
        const canceled = yield* call(`/v1/executions/${falId}/cancel`, { method: "POST" })
        expect(canceled.status).toBe(202)
        const ended = yield* awaitEnd(falId)
        expect(ended.status).toBe("failed")
        expect(ended.errorMessage).toBe("The execution was canceled.")
        let cancel = polled
        while (cancel.method !== "PUT") cancel = yield* fal.next
        expect(cancel.path).toBe("/fal-ai/flux/requests/req-0001/cancel")
        expect(cancel.headers["authorization"]).toBe(`Key ${FAL_KEY}`)
        expect(fal.requests.get("req-0001")!.input).toEqual({
          prompt: "a red fox",
          image_size: "square_hd",
          num_images: 1
        })
        expect(fal.canceled).toEqual(["req-0001"])

        // Everything a consumer or an operator reads: no token.
        yield* call(`/v1/executions/${falId}/logs`)
        for (const id of [replicateId, falId]) yield* call(`/v1/executions/${id}`)
        yield* call(`/v1/apps/${yield* appIdOf("fal image")}/workflow`)
        const everything = [
          ...answers,
          serve.output.stdout,
          serve.output.stderr,
          ...cli.flatMap((r) => [r.stdout, r.stderr])
        ]
        expect(serve.output.stderr.split("\n").length).toBeGreaterThan(5)
        for (const text of everything) {
          expect(text).not.toContain(REPLICATE_TOKEN)
          expect(text).not.toContain(FAL_KEY)
        }
      }),
    120_000
  )
})
