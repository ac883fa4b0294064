/**
 * `appexec secrets`, as an operator runs it (the compiled command), on SQLite and on PostgreSQL:
 * `set` reads the value from stdin and never prints it, refuses a bad name, an empty value and an
 * unknown workspace; `list` shows names, scopes and times only; `delete` removes one scope's; the
 * database holds only sealed values. Beside a running `serve` (on each database), a node
 * (`provider.openai` against a local OpenAI-compatible server) uses the secret set while it runs:
 * the instance's, then the workspace's over it; before any is set the run fails naming the
 * missing secret and is kept. No value appears in any output of the commands, in serve's logs
 * (debug level) or in any API answer.
 */
import { TestOpenAiServer } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { type Backend, backends, query } from "./support/Backends.js"
import { bin } from "./support/Bin.js"
import { startServe, tempDataDir } from "./support/ServeProcess.js"

interface Ran {
  readonly stdout: string
  readonly stderr: string
  readonly code: number
}

/** Runs `appexec …args` to completion with `env` added and `input` on stdin. */
const appexecWith = (env: Record<string, string>, input: string, ...args: Array<string>) =>
  Effect.async<Ran>((resume) => {
    const child = execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, APPEXEC_LOG_FORMAT: "json", APPEXEC_LOG_LEVEL: "debug", ...env } },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ stdout, stderr, code: error === null ? 0 : Number(error.code ?? 1) }))
    )
    child.stdin!.end(input)
  })

/** What the database holds for each secret: name, scope column and stored value. */
const storedRows = (backend: Backend, dataDir: string, env: Record<string, string>) =>
  backend.name === "sqlite"
    ? Effect.sync(() => {
      const db = new Database(join(dataDir, "appexec.db"), { readonly: true, fileMustExist: true })
      try {
        return db.prepare("SELECT name, workspace_id, sealed FROM operator_secrets ORDER BY name, workspace_id")
          .all() as Array<{ name: string; workspace_id: string; sealed: string }>
      } finally {
        db.close()
      }
    })
    : query<{ name: string; workspace_id: string; sealed: string }>(
      env,
      "SELECT name, workspace_id, sealed FROM operator_secrets ORDER BY name, workspace_id"
    )

/**
 * A data directory, and an apps directory holding the app `Chat` (`writeChatApp`) pointed at a
 * fresh OpenAI test server; all three gone with the scope.
 */
const chatDirs = Effect.gen(function*() {
  const dataDir = yield* tempDataDir
  const appsDir = yield* tempDataDir
  const provider = yield* TestOpenAiServer.start({ image: new Uint8Array() })
  writeChatApp(appsDir, provider.baseUrl)
  return { dataDir, appsDir, provider }
})

/** An app `Chat`: a prompt through `provider.openai` (chat, secret `OPENAI_API_KEY`) at `baseUrl`. */
const writeChatApp = (appsDir: string, baseUrl: string) =>
  writeFileSync(
    join(appsDir, "chat.json"),
    JSON.stringify({
      name: "Chat",
      public: true,
      nodes: [
        { id: "prompt", type: "input.text", config: { name: "prompt", required: true } },
        {
          id: "model",
          type: "provider.openai",
          config: {
            mode: "chat",
            model: "echo",
            baseUrl,
            messages: [{ role: "user", content: "{{prompt}}" }],
            retry: { count: 0 }
          }
        },
        { id: "answer", type: "output.text", label: "Answer" }
      ],
      edges: [{ source: "prompt", target: "model" }, { source: "model", target: "answer" }]
    })
  )

/**
 * A client of a served instance with its printed key, keeping every answer's text: `call`, and
 * `runToEnd` that starts the app named `appName` and waits for the run's end.
 */
const clientOf = (serve: { readonly baseUrl: string; readonly key: string }, appName: string) =>
  Effect.gen(function*() {
    const headers = { "x-api-key": serve.key, "content-type": "application/json" }
    const answers: Array<string> = []
    const call = (path: string, init: RequestInit & { readonly prefer?: string } = {}) =>
      Effect.promise(async () => {
        const response = await fetch(`${serve.baseUrl}${path}`, {
          ...init,
          headers: init.prefer === undefined ? headers : { ...headers, prefer: init.prefer }
        })
        const text = await response.text()
        answers.push(text)
        return { status: response.status, body: JSON.parse(text) as { data: Record<string, unknown> } }
      })
    const apps = yield* call(`/v1/apps?search=${appName}`)
    const appId = String((apps.body.data as unknown as Array<{ appId: string }>)[0]!.appId)
    /** Starts a run and waits for its end; the finished execution as GET shows it. */
    const runToEnd = (prompt: string) =>
      Effect.gen(function*() {
        const started = yield* call(`/v1/apps/${appId}/executions`, {
          method: "POST",
          body: JSON.stringify({ inputs: { prompt } })
        })
        const id = String(started.body.data.executionId)
        let seen = yield* call(`/v1/executions/${id}`)
        while (seen.body.data.status === "queued" || seen.body.data.status === "running") {
          seen = yield* call(`/v1/executions/${id}`, { prefer: "wait=20" })
        }
        return { id, execution: seen.body.data }
      })
    return { answers, call, runToEnd, appId }
  })

const INSTANCE_VALUE = "sk-instance-7f3a9c41d2e8"
const WORKSPACE_VALUE = "sk-workspace-b6d05e12aa94"

describe("appexec secrets", () => {
  for (const backend of backends) {
    it.scopedLive(
      `sets from stdin, lists names only, deletes per scope, and stores only sealed values, on ${backend.name}`,
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const env = yield* backend.env
          const appexec = (input: string, ...args: Array<string>) => appexecWith(env, input, ...args, "--data", dataDir)
          const outputs: Array<Ran> = []
          const run = (input: string, ...args: Array<string>) =>
            Effect.tap(appexec(input, ...args), (ran) => outputs.push(ran))

          expect(yield* run(`${INSTANCE_VALUE}\n`, "secrets", "set", "API_TOKEN")).toMatchObject({
            code: 0,
            stdout: "set API_TOKEN for the instance\n"
          })
          expect((yield* run("", "workspaces", "create", "acme")).code).toBe(0)
          expect(yield* run(`${WORKSPACE_VALUE}\r\n\n`, "secrets", "set", "API_TOKEN", "--workspace", "acme"))
            .toMatchObject({ code: 0, stdout: "set API_TOKEN for workspace acme\n" })

          // Refused before anything is stored, each with a clear message.
          const empty = yield* run("\n", "secrets", "set", "EMPTY")
          expect(empty.code).not.toBe(0)
          expect(empty.stderr).toContain("The value of the secret EMPTY is empty")
          const badName = yield* run("x", "secrets", "set", "bad-name")
          expect(badName.code).not.toBe(0)
          expect(badName.stderr).toContain("'bad-name' is not a secret's name")
          const noWorkspace = yield* run("x", "secrets", "set", "OTHER", "--workspace", "nowhere")
          expect(noWorkspace.code).not.toBe(0)
          expect(noWorkspace.stderr).toContain("No workspace is named 'nowhere'")
          const tooLong = yield* run("x".repeat(70_000), "secrets", "set", "LONG")
          expect(tooLong.code).not.toBe(0)
          expect(tooLong.stderr).toContain("more than the 65536 bytes")

          const listed = yield* run("", "secrets", "list")
          const lines = listed.stdout.trim().split("\n").map((line) => line.split("\t"))
          expect(lines).toHaveLength(2)
          expect(lines[0]).toEqual(["API_TOKEN", "instance", expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/)])
          expect(lines[1]).toEqual([
            "API_TOKEN",
            expect.stringMatching(/^workspace [0-9a-f-]{36}$/),
            expect.stringMatching(/Z$/)
          ])

          // At rest: sealed, bound to the row, never the value.
          const rows = yield* storedRows(backend, dataDir, env)
          expect(rows.map((r) => [r.name, r.workspace_id === "" ? "instance" : "workspace"])).toEqual([
            ["API_TOKEN", "instance"],
            ["API_TOKEN", "workspace"]
          ])
          for (const row of rows) {
            expect(row.sealed).toMatch(/^sealed:v1:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$/)
            expect(row.sealed).not.toContain(INSTANCE_VALUE)
            expect(row.sealed).not.toContain(WORKSPACE_VALUE)
          }

          expect(yield* run("", "secrets", "delete", "API_TOKEN", "--workspace", "acme")).toMatchObject({
            code: 0,
            stdout: "deleted API_TOKEN for workspace acme\n"
          })
          const again = yield* run("", "secrets", "delete", "API_TOKEN", "--workspace", "acme")
          expect(again.code).not.toBe(0)
          expect(again.stderr).toContain("No secret API_TOKEN is set for workspace acme")
          expect((yield* run("", "secrets", "list")).stdout).toMatch(/^API_TOKEN\tinstance\t\S+Z\n$/)

          for (const ran of outputs) {
            for (const text of [ran.stdout, ran.stderr]) {
              expect(text).not.toContain(INSTANCE_VALUE)
              expect(text).not.toContain(WORKSPACE_VALUE)
            }
          }
        }),
      120_000
    )
  }

  for (const backend of backends) {
    it.scopedLive(
      `a node run uses the secret set beside a running serve, the workspace's over the instance's; a missing one fails the run naming it; no value in any log or answer, on ${backend.name}`,
      () =>
        Effect.gen(function*() {
          const { appsDir, dataDir, provider } = yield* chatDirs
          const debug = { ...(yield* backend.env), APPEXEC_LOG_LEVEL: "debug" }
          const serve = yield* startServe(dataDir, ["--apps", appsDir, "--allow-private-networks"], debug)
          const { answers, appId, call, runToEnd } = yield* clientOf(serve, "Chat")
          const cli: Array<Ran> = []
          const appexec = (input: string, ...args: Array<string>) =>
            Effect.tap(appexecWith(debug, input, ...args, "--data", dataDir), (ran) => cli.push(ran))

          // No secret yet: the run fails naming it, and is kept.
          const missing = yield* runToEnd("hello")
          expect(missing.execution.status).toBe("failed")
          expect(String(missing.execution.errorMessage)).toContain("OPENAI_API_KEY")
          expect(JSON.stringify(missing.execution.outputs)).toContain(
            "The secret OPENAI_API_KEY is not set (an operator sets it with: appexec secrets set OPENAI_API_KEY)"
          )
          expect((yield* call(`/v1/executions/${missing.id}`)).body.data.status).toBe("failed")
          expect(provider.received).toHaveLength(0)

          // Set for the instance while serve runs: the next run uses it.
          expect((yield* appexec(`${INSTANCE_VALUE}\n`, "secrets", "set", "OPENAI_API_KEY")).code).toBe(0)
          const first = yield* runToEnd("first")
          expect(first.execution.status).toBe("completed")
          expect(provider.received.at(-1)!.headers.authorization).toBe(`Bearer ${INSTANCE_VALUE}`)

          // The workspace's own (the printed key's workspace is `default`) overrides it.
          expect((yield* appexec(WORKSPACE_VALUE, "secrets", "set", "OPENAI_API_KEY", "--workspace", "default")).code)
            .toBe(0)
          const second = yield* runToEnd("second")
          expect(second.execution.status).toBe("completed")
          expect(provider.received.at(-1)!.headers.authorization).toBe(`Bearer ${WORKSPACE_VALUE}`)

          // Deleted again: the instance's applies.
          expect((yield* appexec("", "secrets", "delete", "OPENAI_API_KEY", "--workspace", "default")).code).toBe(0)
          expect((yield* runToEnd("third")).execution.status).toBe("completed")
          expect(provider.received.at(-1)!.headers.authorization).toBe(`Bearer ${INSTANCE_VALUE}`)

          // Everything a consumer or an operator can read: no value.
          yield* call(`/v1/apps/${appId}`)
          yield* call(`/v1/apps/${appId}/workflow`)
          yield* call(`/v1/executions/${first.id}/logs`)
          yield* call("/v1/executions")
          const everything = [
            ...answers,
            serve.output.stdout,
            serve.output.stderr,
            ...cli.flatMap((ran) => [ran.stdout, ran.stderr])
          ]
          // Serve logged the runs (one line per transition): what was checked is not empty.
          expect(serve.output.stderr.split("\n").length).toBeGreaterThan(5)
          for (const text of everything) {
            expect(text).not.toContain(INSTANCE_VALUE)
            expect(text).not.toContain(WORKSPACE_VALUE)
          }
        }),
      120_000
    )
  }

  it.scopedLive(
    "a new master key with the old one as previous seals every secret again at the next start; the old key can then go",
    () =>
      Effect.gen(function*() {
        const { appsDir, dataDir, provider } = yield* chatDirs
        const oldKey = { APPEXEC_MASTER_KEY: Buffer.alloc(32, 1).toString("base64url") }
        const newKey = { APPEXEC_MASTER_KEY: Buffer.alloc(32, 2).toString("base64url") }
        const sealed = () => Effect.map(storedRows(backends[0]!, dataDir, {}), (rows) => rows[0]!.sealed)
        expect((yield* appexecWith(oldKey, INSTANCE_VALUE, "secrets", "set", "OPENAI_API_KEY", "--data", dataDir)).code)
          .toBe(0)
        const before = yield* sealed()

        // The next command with the new key and the old one as previous seals the secret again.
        const rotated = yield* appexecWith(
          { ...newKey, APPEXEC_MASTER_KEY_PREVIOUS: oldKey.APPEXEC_MASTER_KEY },
          "",
          "secrets",
          "list",
          "--data",
          dataDir
        )
        expect(rotated.code).toBe(0)
        expect(rotated.stderr).toContain("secret OPENAI_API_KEY of the instance sealed with the new master key")
        expect(yield* sealed()).not.toBe(before)

        // With the new key alone, a run uses it.
        const serve = yield* startServe(dataDir, ["--apps", appsDir, "--allow-private-networks"], newKey)
        const { runToEnd } = yield* clientOf(serve, "Chat")
        expect((yield* runToEnd("after the rotation")).execution.status).toBe("completed")
        expect(provider.received.at(-1)!.headers.authorization).toBe(`Bearer ${INSTANCE_VALUE}`)
        for (const text of [rotated.stdout, rotated.stderr, serve.output.stdout, serve.output.stderr]) {
          expect(text).not.toContain(INSTANCE_VALUE)
        }
      }),
    120_000
  )
})
