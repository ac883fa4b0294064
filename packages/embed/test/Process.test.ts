/**
 * An embedded instance in a host process on a real SQLite file behind a real socket (the built
 * package, as a host runs it): SIGTERM's `close()` drains a running execution before it
 * resolves, and with no drain it hands the execution back, which the next process on the same
 * file resumes and completes.
 */
import { describe, expect, it } from "@effect/vitest"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll } from "vitest"

const host = fileURLToPath(new URL("./fixtures/host.mjs", import.meta.url))
const scenario = fileURLToPath(new URL("./fixtures/scenario.mjs", import.meta.url))
const folder = mkdtempSync(join(tmpdir(), "appexec-embed-process-"))
const file = join(folder, "data", "appexec.db")
afterAll(() => rmSync(folder, { recursive: true, force: true }))

interface Started {
  readonly child: ChildProcess
  readonly url: string
  readonly key: string
  readonly apps: { readonly short: string; readonly long: string }
  /** Resolves with the exit code and all the output once the process has exited. */
  readonly exited: Promise<{ readonly code: number | null; readonly output: string }>
}

/** Starts a host process on `file`; resolves once it serves. */
const startHost = (drainMs: number) =>
  new Promise<Started>((resolve, reject) => {
    const child = spawn(process.execPath, [host, file, String(drainMs)], { stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const exited = new Promise<{ code: number | null; output: string }>((done) =>
      child.on("close", (code) => done({ code, output }))
    )
    child.stderr.on("data", (chunk: Buffer) => void (output += chunk.toString()))
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      const line = output.split("\n").find((l) => l.startsWith("{"))
      if (line !== undefined) resolve({ child, exited, ...JSON.parse(line) })
    })
    void exited.then(({ code, output }) => reject(new Error(`host exited (${code}) before it served:\n${output}`)))
  })

interface Execution {
  readonly executionId: string
  readonly status: string
  readonly attempt: number
  readonly outputs: ReadonlyArray<{ readonly value: string | null }>
}

const call = async (started: Started, path: string, init: RequestInit = {}) => {
  const response = await fetch(`${started.url}${path}`, {
    ...init,
    headers: { "x-api-key": started.key, "content-type": "application/json", ...init.headers }
  })
  return { status: response.status, etag: response.headers.get("etag"), body: await response.json() }
}

const start = async (started: Started, appId: string) => {
  const answer = await call(started, `/v1/apps/${appId}/executions`, {
    method: "POST",
    body: JSON.stringify({ inputs: { who: "Ada" } })
  })
  expect(answer.status).toBe(202)
  return (answer.body as { data: Execution }).data.executionId
}

/** The execution once `done` holds, long-polled at each change (`If-None-Match`, `Prefer: wait`). */
const until = async (started: Started, executionId: string, done: (e: Execution) => boolean): Promise<Execution> => {
  let etag: string | null = null
  for (;;) {
    const answer = await call(started, `/v1/executions/${executionId}`, {
      headers: etag === null ? {} : { "if-none-match": etag, prefer: "wait=10" }
    })
    if (answer.status === 200) {
      const execution = (answer.body as { data: Execution }).data
      if (done(execution)) return execution
      etag = answer.etag
    }
  }
}

const stop = async (started: Started) => {
  started.child.kill("SIGTERM")
  const { code, output } = await started.exited
  expect(code, output).toBe(0)
  expect(output).toContain("closed")
}

describe("an embedded instance in a host process, on SQLite", () => {
  it("apps, start and await, cancel, list, keys, secrets, as, and errors with code, details and instanceof", () => {
    const seen = JSON.parse(execFileSync(process.execPath, [scenario, file], { encoding: "utf8", timeout: 60_000 }))
    expect(seen.done).toEqual({ status: "completed", value: "Hello Ada" })
    expect(seen.canceled).toEqual({ status: "failed", errorMessage: "The execution was canceled." })
    expect(seen.listed).toEqual(seen.ids)
    expect(seen.otherWorkspace).toEqual({
      appexecError: true,
      invalidInputs: false,
      notFound: true,
      code: "not_found",
      details: null,
      tag: null
    })
    expect(seen.invalid).toEqual({
      appexecError: true,
      invalidInputs: true,
      notFound: false,
      code: "invalid_inputs",
      details: [{ parameter: "who", problem: "empty" }],
      tag: null
    })
    expect(seen.cancelAgain).toMatchObject({ appexecError: true, code: "execution_finished" })
    expect(seen.keys).toEqual([{ workspace: "acme", hint: true }])
    expect(seen.secrets).toEqual(["TOKEN"])
  }, 60_000)

  it("close() on SIGTERM drains a running execution, then resolves; the next process finds it completed", async () => {
    const first = await startHost(10_000)
    const executionId = await start(first, first.apps.short)
    await until(first, executionId, (e) => e.status === "running")
    await stop(first)

    const second = await startHost(0)
    try {
      const after = await until(second, executionId, () => true)
      expect(after.status).toBe("completed")
      expect(after.attempt).toBe(1)
    } finally {
      await stop(second)
    }
  }, 60_000)

  it("with no drain the running execution is handed back, and the next process on the file resumes it", async () => {
    const first = await startHost(0)
    const executionId = await start(first, first.apps.long)
    await until(first, executionId, (e) => e.status === "running")
    await stop(first)

    const second = await startHost(0)
    try {
      // Not finished by the first process (its run of 3 s was stopped), not failed by its stop.
      const handedBack = await until(second, executionId, () => true)
      expect(["queued", "running"]).toContain(handedBack.status)
      const done = await until(second, executionId, (e) => e.status === "completed" || e.status === "failed")
      expect(done.status).toBe("completed")
      expect(done.outputs[0]?.value).toBe("Ada")
    } finally {
      await stop(second)
    }
  }, 60_000)
})
