/**
 * The compiled `appexec` command as the benchmarks run it: `appexec serve` (resolved with the API
 * key and base URL it prints on a fresh data directory) and `appexec worker` (resolved once it
 * says it runs), each stopped with its scope (SIGTERM, then waited for).
 */
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdirSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

/** The command: this checkout's build, or another build named by `BENCH_APPEXEC_BIN` (to compare two). */
export const bin = process.env["BENCH_APPEXEC_BIN"] ??
  fileURLToPath(new URL("../../../server/dist/appexec.js", import.meta.url))

/** The repository's root, the directory the command runs in. */
const root = fileURLToPath(new URL("../../../../", import.meta.url))

/** A fresh master key as the environment of the command, for every process of one instance to share. */
export const masterKey = (): Record<string, string> => ({ APPEXEC_MASTER_KEY: randomBytes(32).toString("base64url") })

/** Writes `apps` (app definitions, one JSON file each) to a new directory `apps` in `dir`, for `serve --apps`; its path. */
export const writeApps = (dir: string, apps: ReadonlyArray<unknown>): string => {
  const path = join(dir, "apps")
  mkdirSync(path)
  apps.forEach((app, i) => writeFileSync(join(path, `app-${i + 1}.json`), JSON.stringify(app)))
  return path
}

/** A running `appexec serve`: its process, the key it printed, and its base URL. */
export interface Serve {
  readonly child: ChildProcess
  readonly key: string
  readonly baseUrl: string
}

/** Stops `child` (SIGTERM) and waits for its exit. */
const stop = (child: ChildProcess) =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
    child.kill("SIGTERM")
  })

/** Its warnings and errors, in the command's default log format (logfmt). */
const severe = /^time=\S+ level=(warn|error|fatal) /

/**
 * Starts `appexec <command> ...args` and resolves with `ready(output so far)` once it answers
 * something, reading `watched` (stdout: what the command prints; stderr: its log, where the
 * start-up lines are; none: at once, with `ready("")`). Of the log, only warnings and errors reach
 * this process's stderr.
 */
const start = <A>(
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  watched: "stdout" | "stderr" | "none",
  ready: (out: string, child: ChildProcess) => A | undefined
) =>
  Effect.acquireRelease(
    Effect.async<{ readonly child: ChildProcess; readonly value: A }, Error>((resume) => {
      const child = spawn(process.execPath, [bin, ...args], {
        cwd: root,
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let out = ""
      let resolved = false
      let partial = ""
      child.stderr!.on("data", (d) => {
        const lines = (partial + String(d)).split("\n")
        partial = lines.pop()!
        for (const line of lines) if (severe.test(line)) process.stderr.write(`${line}\n`)
      })
      child.once("exit", (code) => resume(Effect.fail(new Error(`appexec ${args[0]} exited with ${code}`))))
      if (watched === "none") {
        resume(Effect.succeed({ child, value: ready("", child)! }))
        return
      }
      child[watched]!.on("data", (d) => {
        if (resolved) return
        out += String(d)
        const value = ready(out, child)
        if (value !== undefined) {
          resolved = true
          out = ""
          resume(Effect.succeed({ child, value }))
        }
      })
    }),
    ({ child }) => stop(child)
  )

/**
 * `appexec serve ...args` on a fresh data directory (given in `args`): resolved with the key and
 * base URL of the curl line it prints; its request log (stderr) is ignored.
 */
export const serve = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.map(
    start(["serve", "--port", "0", ...args], env, "stdout", (out, child): Serve | undefined => {
      const match = /curl -H 'x-api-key: (aex_[A-Za-z0-9_-]+)' (http:\/\/[^\s]+)\/v1\/apps/.exec(out)
      return match === null ? undefined : { child, key: match[1]!, baseUrl: match[2]! }
    }),
    ({ value }) => value
  )

/** A port free on 127.0.0.1 now (the system's pick, released at once). */
const freePort = Effect.async<number, Error>((resume) => {
  const server = createServer()
  server.once("error", (error) => resume(Effect.fail(error)))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Completes once `url` answers 200, asked every 20 ms; fails if `child` exits first. */
const readyAt = (url: string, child: ChildProcess) =>
  Effect.tryPromise(async () => {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`appexec worker exited before ${url}`)
      const ok = await fetch(url).then((response) => response.ok, () => false)
      if (ok) return
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })

/**
 * `appexec worker ...args` at log level warning (as an operator runs a busy worker: no line per
 * execution transition), resolved with its process once its admin port's `/readyz` answers 200;
 * its warnings go to stderr.
 */
export const worker = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.flatMap(freePort, (port) =>
    Effect.flatMap(
      start(
        ["worker", "--admin-port", String(port), ...args],
        { APPEXEC_LOG_FORMAT: "logfmt", APPEXEC_LOG_LEVEL: "warning", ...env },
        "none",
        () => true
      ),
      ({ child }) => Effect.as(readyAt(`http://127.0.0.1:${port}/readyz`, child), child)
    ))

/** A JSON request to a served API, its answer's `data`; a status other than 2xx fails. */
export const call = <A>(server: Serve, path: string, body?: unknown) =>
  Effect.tryPromise(async () => {
    const response = await fetch(`${server.baseUrl}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "x-api-key": server.key, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`)
    return ((await response.json()) as { data: A }).data
  })
