/**
 * No secret leaves `appexec serve` in clear, whatever a provider echoes (docs/security.md). The
 * compiled command at debug level, private networks allowed, runs one app per node type that can
 * carry a secret — `http.request` (a secret set with `appexec secrets set`, and one given as
 * `APPEXEC_SECRET_<NAME>`), `http.job`, `provider.openai`, `provider.replicate` and `provider.fal`
 * (their base URLs pointed at a local server) — each against a provider that echoes the
 * credential (and its base64 and URL encodings) in a 4xx body, a 5xx body, a 2xx JSON body, a
 * 2xx text body and a response header (`EchoProvider`), each execution with a webhook to a local
 * receiver. The provider gets every real token; no token, nor its base64, base64url or URL
 * encoding, is in serve's stdout or stderr, any poll answer, event stream or `/logs` answer, any
 * webhook body, or the bytes of the SQLite database and its WAL; the echoes read `[secret]`.
 */
import { TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { bin } from "./support/Bin.js"
import * as EchoProvider from "./support/EchoProvider.js"
import { startServe, tempDataDir } from "./support/ServeProcess.js"

/** The tokens, by the secret that holds each; `env_token` comes from `APPEXEC_SECRET_ENV_TOKEN`. */
const TOKENS = {
  ECHO_TOKEN: "sk-RTSECRET-9f8e/7d6c+5b4a",
  env_token: "env-Tk8s7d6f5g4h3j2k1/l0+m",
  JOB_TOKEN: "job_Ab1Cd2Ef3Gh4Ij5Kl6/Mn7+",
  OPENAI_API_KEY: "sk-proj-Q2w3E4r5T6y7/U8i9+o0",
  REPLICATE_API_TOKEN: "r8_Zx9Yw8Vu7Ts6Rq5Po4/Nm3+",
  FAL_KEY: "fal-4d3c2b1a:9e8f7a6b5c/4d+3e"
} as const

/** Every form of every token that must appear nowhere. */
const forbidden = Object.values(TOKENS).flatMap((token) => [
  token,
  Buffer.from(token).toString("base64"),
  Buffer.from(token).toString("base64url"),
  encodeURIComponent(token)
])

const prompt = { id: "prompt", type: "input.text", config: { name: "prompt", required: true } }

/** An app: the prompt through `node` (of `type`, with `config`) to a text output. */
const appOf = (name: string, type: string, config: Record<string, unknown>) => ({
  name,
  public: true,
  nodes: [prompt, { id: "call", type, label: "Call", config }, { id: "out", type: "output.text", label: "Out" }],
  edges: [{ source: "prompt", target: "call" }, { source: "call", target: "out" }]
})

const noRetry = { count: 0 }

/** One app per node type, at the provider's origin. */
const appsAt = (origin: string) => [
  appOf("Echo request", "http.request", {
    method: "POST",
    url: `${origin}/call`,
    body: { input: "{{prompt}}" },
    headers: { Authorization: { secret: "ECHO_TOKEN", prefix: "Bearer " } }
  }),
  appOf("Echo request env", "http.request", {
    method: "POST",
    url: `${origin}/call`,
    body: { input: "{{prompt}}" },
    headers: { Authorization: { secret: "env_token", prefix: "Bearer " } }
  }),
  appOf("Echo job", "http.job", {
    submit: { method: "POST", url: `${origin}/jobs`, body: { input: "{{prompt}}" } },
    headers: { Authorization: { secret: "JOB_TOKEN", prefix: "Bearer " } },
    id: "/id",
    answerError: "/detail",
    status: { urlFrom: "/urls/get", pointer: "/status", success: ["succeeded", "COMPLETED"], intervalMs: 100 },
    result: { pick: "/echo", output: "text" },
    retry: noRetry
  }),
  appOf("Echo OpenAI", "provider.openai", {
    mode: "chat",
    model: "echo-1",
    baseUrl: `${origin}/v1`,
    messages: [{ role: "user", content: "{{prompt}}" }],
    retry: noRetry
  }),
  appOf("Echo Replicate", "provider.replicate", {
    model: "acme/echo",
    input: { prompt: "{{prompt}}" },
    output: "text",
    baseUrl: origin,
    waitSeconds: 1,
    retry: noRetry
  }),
  appOf("Echo fal", "provider.fal", {
    model: "fal-ai/echo",
    input: { prompt: "{{prompt}}" },
    pick: "/echo",
    output: "text",
    baseUrl: origin,
    retry: noRetry
  })
]

/** `appexec …args` with `input` on stdin, to its end: its output and exit code. */
const appexec = (input: string, ...args: Array<string>) =>
  Effect.async<{ readonly stdout: string; readonly stderr: string; readonly code: number }>((resume) => {
    const child = execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, APPEXEC_LOG_LEVEL: "debug" } },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ stdout, stderr, code: error === null ? 0 : Number(error.code ?? 1) }))
    )
    child.stdin!.end(input)
  })

interface Execution {
  readonly executionId: string
  readonly status: string
  readonly errorMessage: string | null
  readonly outputs: ReadonlyArray<{ readonly value: string | null; readonly error: string | null }>
}

describe("no secret leaves appexec serve in clear", () => {
  it.scopedLive(
    "five ways of echoing the token, six apps over five node types: the token is nowhere, the echoes say [secret]",
    () =>
      Effect.gen(function*() {
        const provider = yield* EchoProvider.start
        const receiver = yield* TestReceiver.start()
        const dataDir = yield* tempDataDir
        const appsDir = yield* tempDataDir
        const apps = appsAt(provider.origin)
        apps.forEach((app, i) => writeFileSync(join(appsDir, `app-${i}.json`), JSON.stringify(app)))
        const serve = yield* startServe(dataDir, [
          "--apps",
          appsDir,
          "--allow-private-networks",
          "--rate-limit",
          "100000"
        ], {
          APPEXEC_LOG_LEVEL: "debug",
          APPEXEC_SECRET_ENV_TOKEN: TOKENS.env_token
        })
        const commands: Array<string> = []
        for (const [name, value] of Object.entries(TOKENS)) {
          if (name === "env_token") continue
          const ran = yield* appexec(`${value}\n`, "secrets", "set", name, "--data", dataDir)
          expect(ran.code, ran.stderr).toBe(0)
          commands.push(ran.stdout, ran.stderr)
        }

        const answers: Array<string> = []
        const call = (path: string, init: RequestInit = {}) =>
          Effect.promise(async () => {
            const response = await fetch(`${serve.baseUrl}${path}`, {
              ...init,
              headers: { "x-api-key": serve.key, "content-type": "application/json", ...init.headers }
            })
            const text = await response.text()
            answers.push(text)
            return text
          })
        const listed = JSON.parse(yield* call("/v1/apps?limit=100")) as {
          data: Array<{ appId: string; name: string }>
        }
        const appIdOf = (name: string) => listed.data.find((a) => a.name === name)!.appId

        // Every app with every mode, all started at once, each with a webhook.
        const runs: Array<{ app: string; mode: EchoProvider.Mode; id: string }> = []
        for (const app of apps) {
          for (const mode of EchoProvider.MODES) {
            const started = JSON.parse(
              yield* call(
                `/v1/apps/${appIdOf(app.name)}/executions?webhook=${encodeURIComponent(receiver.url(`/hook`))}`,
                { method: "POST", body: JSON.stringify({ inputs: { prompt: `mode=${mode}` } }) }
              )
            ) as { data: { executionId: string } }
            runs.push({ app: app.name, mode, id: started.data.executionId })
          }
        }
        const ended = new Map<string, Execution>()
        for (const run of runs) {
          let seen = (JSON.parse(yield* call(`/v1/executions/${run.id}`)) as { data: Execution }).data
          while (seen.status === "queued" || seen.status === "running") {
            seen = (JSON.parse(yield* call(`/v1/executions/${run.id}`, { headers: { prefer: "wait=20" } })) as {
              data: Execution
            }).data
          }
          ended.set(run.id, seen)
          yield* call(`/v1/executions/${run.id}/events`, { headers: { accept: "text/event-stream" } })
          yield* call(`/v1/executions/${run.id}/logs`)
        }
        while (receiver.received.length < runs.length) yield* receiver.next
        // Stopped, so that its last log lines are written and its database closed.
        serve.child.kill("SIGTERM")
        yield* serve.exited("60 seconds")

        // The echoes happened, and were masked where they landed.
        for (const run of runs) {
          const done = ended.get(run.id)!
          const outcome = `${run.app} ${run.mode}: ${JSON.stringify(done)}`
          if (run.mode === "4xx" || run.mode === "5xx") expect(done.status, outcome).toBe("failed")
          if (run.mode === "json" || run.mode === "header") expect(done.status, outcome).toBe("completed")
          if (run.mode === "json") {
            expect(done.outputs[0]!.value, outcome).toMatch(
              /auth: (Bearer|Key) \[secret\]; token: \[secret\]; b64: \[secret\]/
            )
          }
        }
        const requestText = ended.get(runs.find((r) => r.app === "Echo request" && r.mode === "text")!.id)!
        expect(requestText.outputs[0]!.value).toContain("token: [secret]; b64: [secret]; b64url: [secret]")
        const jobFailure = ended.get(runs.find((r) => r.app === "Echo job" && r.mode === "4xx")!.id)!
        expect(jobFailure.errorMessage).toContain("bad token: auth: Bearer [secret]; token: [secret]; b64: [secret]")
        expect(serve.output.stderr).toContain("[secret]")

        // The provider got the real tokens: they stay whole up to the wire.
        const sent = new Set(provider.received.map((r) => r.authorization))
        expect(sent).toContain(`Bearer ${TOKENS.ECHO_TOKEN}`)
        expect(sent).toContain(`Bearer ${TOKENS.env_token}`)
        expect(sent).toContain(`Bearer ${TOKENS.JOB_TOKEN}`)
        expect(sent).toContain(`Bearer ${TOKENS.OPENAI_API_KEY}`)
        expect(sent).toContain(`Bearer ${TOKENS.REPLICATE_API_TOKEN}`)
        expect(sent).toContain(`Key ${TOKENS.FAL_KEY}`)

        // Nowhere in clear.
        const database = ["appexec.db", "appexec.db-wal"]
          .map((file) => join(dataDir, file))
          .filter(existsSync)
          .map((file) => readFileSync(file))
        expect(database.length).toBeGreaterThan(0)
        const written: Array<[string, string | Buffer]> = [
          ["serve stdout", serve.output.stdout],
          ["serve stderr", serve.output.stderr],
          ["commands", commands.join("\n")],
          ...answers.map((a, i): [string, string] => [`answer ${i}`, a]),
          ...receiver.received.map((r, i): [string, Buffer] => [`webhook ${i}`, Buffer.from(r.rawBody)]),
          ...database.map((bytes, i): [string, Buffer] => [`database file ${i}`, bytes])
        ]
        for (const [where, text] of written) {
          for (const form of forbidden) {
            expect(text.includes(form), `${form} in ${where}`).toBe(false)
          }
        }
      }),
    240_000
  )
})
