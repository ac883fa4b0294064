#!/usr/bin/env node
/**
 * The pack-and-install test: appexec as a user gets it from the registry.
 *
 * 1. `npm pack` every publishable package (`packages/*` not `private`) and check each tarball:
 *    compiled `dist/**\/*.js` with `.d.ts` beside every module, `package.json`, `LICENSE`, no
 *    tests, no `*.tsbuildinfo`, no build output whose source is gone.
 * 2. `publint --strict` and `attw` (ESM-only profile) on every tarball.
 * 3. The pack and install lines of `README.md` and `docs/install.md` as written
 *    (`pack-test/documented-lines.mjs`): the pack line in a copy of the repository under
 *    `os.tmpdir()`, each install line in a fresh npm project beside it (embedding, the client,
 *    the command). Then, under plain `node` with no TypeScript loader:
 *    (a) in the embedding project: the README's embedding program to a completed execution;
 *        PostgreSQL asked for without `@appexec/postgres`, refused with the line that installs
 *        it; the Express and Fastify examples with their framework added (`pack-test/frameworks.mjs`);
 *    (b) in the command's project: `appexec serve --port 0`, its URL and API key read;
 *    (c) in the client's project: the Greeting app run by name with a webhook verified by
 *        `@appexec/client/node`; then SIGTERM the server: it must exit 0.
 * 4. Measure `@appexec/client` installed alone: packages, MB on disk, native modules, the
 *    modules Node loads for its main entry, and its browser bundle.
 * 5. Install `@appexec/nodes` alone: no sharp and no ffmpeg come with it (they are
 *    `@appexec/nodes-image`'s and `@appexec/nodes-video`'s), and its node types load under plain
 *    `node`; measure it as the client.
 *
 * Every step fails loudly with the output of what failed. Temp directories and child processes
 * are removed on every exit.
 */
import { spawn } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { checkClientAlone } from "./pack-test/client-alone.mjs"
import { copyRepository, documentedLines, packagesOf } from "./pack-test/documented-lines.mjs"
import { lintTarball } from "./pack-test/lint-tarball.mjs"
import { checkNodesAlone } from "./pack-test/nodes-alone.mjs"

const repo = fileURLToPath(new URL("..", import.meta.url))
const here = fileURLToPath(new URL("./pack-test/", import.meta.url))
const bin = (name) => join(repo, "node_modules", ".bin", name)
const startedAt = Date.now()

// ---------------------------------------------------------------------------------------------
// Temp directory and child processes, removed on every exit

const tmp = mkdtempSync(join(tmpdir(), "appexec-pack-"))
/** @type {Set<import("node:child_process").ChildProcess>} */
const children = new Set()
/** Kills `child` and what it started (its process group: every child here leads one). */
const kill = (child) => {
  try {
    process.kill(-child.pid, "SIGKILL")
  } catch {
    child.kill("SIGKILL")
  }
}
const cleanup = () => {
  for (const child of children) kill(child)
  children.clear()
  rmSync(tmp, { recursive: true, force: true })
}
process.on("exit", cleanup)
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    console.error(`\npack test: ${signal}, cleaning up`)
    process.exit(130)
  })
}

/** A failed step: its message and the output of what failed. */
class StepFailed extends Error {
  constructor(message, output = "") {
    super(message)
    this.output = output
  }
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)}s`
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`
const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MB`

/** Runs `name`, printing its duration; on failure prints the failure and its output, and exits 1. */
const step = async (name, fn) => {
  const t0 = Date.now()
  try {
    const result = await fn()
    console.log(`✓ ${name} (${seconds(Date.now() - t0)})`)
    return result
  } catch (error) {
    console.error(
      `\n✗ ${name} (${seconds(Date.now() - t0)})\n${error instanceof Error ? error.message : String(error)}`
    )
    if (error instanceof StepFailed && error.output) {
      console.error(`--- output ---\n${error.output.trimEnd()}\n--- end of output ---`)
    } else if (error instanceof Error && error.stack) console.error(error.stack)
    process.exit(1)
  }
}

/**
 * Runs a command to its end; resolves with its output, or rejects with `StepFailed` (and the
 * output) when it exits non-zero or outlives `timeoutMs`.
 */
const run = (command, args, { cwd = repo, env = {}, timeoutMs = 120_000 } = {}) =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      // A group of its own, so that a timeout or the cleanup ends what it started too (an install's build scripts).
      detached: true
    })
    children.add(child)
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    const timer = setTimeout(() => kill(child), timeoutMs)
    child.on("error", (error) => {
      clearTimeout(timer)
      children.delete(child)
      reject(new StepFailed(`${command} ${args.join(" ")}: ${error.message}`))
    })
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      children.delete(child)
      const output = `$ ${command} ${args.join(" ")}   (in ${cwd})\n${stdout}${stderr}`
      if (code === 0) resolve({ stdout, stderr })
      else {reject(
          new StepFailed(
            signal ? `killed by ${signal} (timeout ${seconds(timeoutMs)}?)` : `exited with code ${code}`,
            output
          )
        )}
    })
  })

/** `npm` with the quiet flags every call here wants. */
const npm = (args, options) => run("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], options)

const readJson = (path) => JSON.parse(readFileSync(path, "utf8"))

// ---------------------------------------------------------------------------------------------
// 1. Pack and check every publishable package

const packages = readdirSync(join(repo, "packages"))
  .map((dir) => ({ dir: join(repo, "packages", dir), manifest: readJson(join(repo, "packages", dir, "package.json")) }))
  .filter((p) => p.manifest.private !== true)

const tarballs = join(tmp, "tarballs")
mkdirSync(tarballs)

const packed = await step(`npm pack ${packages.length} packages`, () =>
  Promise.all(
    packages.map(async ({ dir, manifest }) => {
      if (!existsSync(join(dir, "dist"))) {
        throw new StepFailed(`${manifest.name} has no dist/: run \`npm run build\` first.`)
      }
      const { stdout } = await npm(["pack", "--json", "--pack-destination", tarballs], { cwd: dir })
      const [info] = JSON.parse(stdout)
      return {
        name: manifest.name,
        manifest,
        tarball: join(tarballs, info.filename),
        size: info.size,
        unpackedSize: info.unpackedSize,
        files: info.files.map((f) => f.path)
      }
    })
  ))

await step(
  "tarball contents: dist JS with types, package.json, LICENSE; no tests, no tsbuildinfo, no stale output",
  async () => {
    const problems = []
    for (const p of packed) {
      const files = new Set(p.files)
      const say = (problem) => problems.push(`${p.name}: ${problem}`)
      const bins = new Set(Object.values(p.manifest.bin ?? {}).map((b) => b.replace(/^\.\//, "")))
      const js = p.files.filter((f) => /^dist\/.*\.js$/.test(f))
      if (js.length === 0) say("no dist/**/*.js")
      if (!p.files.some((f) => /^dist\/.*\.d\.ts$/.test(f))) say("no dist/**/*.d.ts")
      for (const required of ["package.json", "LICENSE"]) if (!files.has(required)) say(`no ${required}`)
      for (const f of p.files) {
        if (/(^|\/)tests?\//.test(f) || /\.test\.[cm]?[jt]s$/.test(f)) say(`ships a test file: ${f}`)
        if (f.endsWith(".tsbuildinfo")) say(`ships ${f}`)
      }
      // Every module but the bundled command (and the chunks it loads on demand, `dist/chunks/` of a
      // package with a bin) has its types and its source (a module without source is left over from an old build).
      // The bin (`bin/appexec.js`) loads the bundled command, `dist/appexec.js`.
      const bundled = (f) => bins.size > 0 && (f === "dist/appexec.js" || f.startsWith("dist/chunks/"))
      for (const f of js.filter((f) => !bundled(f))) {
        if (!files.has(f.replace(/\.js$/, ".d.ts"))) say(`${f} has no .d.ts`)
        if (!files.has(f.replace(/^dist\//, "src/").replace(/\.js$/, ".ts"))) {
          say(
            `${f} has no source in src/: stale build output? (rm -rf dist, build again)`
          )
        }
      }
    }
    if (problems.length > 0) throw new StepFailed(`${problems.length} problem(s)`, problems.join("\n"))
  }
)

// ---------------------------------------------------------------------------------------------
// 2. Lints, 3. installs: run side by side

/** Runs `tasks` (functions returning promises) with at most `limit` at a time. */
const pool = async (tasks, limit) => {
  const results = []
  let next = 0
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++
      results[i] = await tasks[i]()
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker))
  return results
}

/** A fresh npm project (`type: module`) named `name` under `dir`. */
const project = async (name, dir = tmp) => {
  const path = join(dir, name)
  mkdirSync(path)
  await npm(["init", "-y"], { cwd: path })
  const manifest = readJson(join(path, "package.json"))
  writeFileSync(join(path, "package.json"), JSON.stringify({ ...manifest, type: "module", private: true }, null, 2))
  return path
}

/**
 * Runs a documented line as written, under bash, in `cwd`. npm reads what it can from the cache
 * `npm ci` filled (`prefer-offline`, set in the environment, not in the line).
 */
const bash = (line, cwd, timeoutMs) =>
  run("bash", ["-e", "-o", "pipefail", "-c", line], { cwd, timeoutMs, env: { npm_config_prefer_offline: "true" } })

const lines = documentedLines(repo)
const work = join(tmp, "work")
mkdirSync(work)

/** Which project a documented install line makes: what it installs decides. */
const roleOf = (command) => {
  const installed = packagesOf(command)
  return installed.includes("server") ? "command" : installed.includes("embed") ? "embedding" : "client"
}

const nodesAlone = ["api", "core", "nodes"].map((name) => join(tarballs, `appexec-${name}-0.1.0.tgz`))

const [lints, projects, nodesProject] = await Promise.all([
  step(
    `publint --strict and attw --profile esm-only on ${packed.length} tarballs`,
    () => pool(packed.map((p) => () => lintTarball(p, { bin, run, StepFailed })), 4)
  ),
  step(
    `the ${lines.length} pack and install lines of ${["README.md", "docs/install.md"].join(" and ")}, as written`,
    async () => {
      const copy = copyRepository(repo, work)
      for (const { line } of lines.filter((l) => l.where === "repository")) await bash(line, copy, 600_000)
      const installs = lines.filter((l) => l.where === "project")
      const made = await pool(
        installs.map(({ command, line }) => async () => {
          const dir = await project(roleOf(command), work)
          // Two at a time: each may build better-sqlite3 from source where no prebuilt binary can be fetched.
          await bash(line, dir, 1_200_000)
          return [roleOf(command), dir]
        }),
        2
      )
      const byRole = Object.fromEntries(made)
      for (const role of ["embedding", "client", "command"]) {
        if (byRole[role] === undefined) throw new StepFailed(`no documented install line for ${role}`)
      }
      return byRole
    }
  ),
  step("npm install @appexec/nodes alone (with the tarballs of @appexec/api and @appexec/core)", async () => {
    const dir = await project("nodes")
    await npm(["install", "--prefer-offline", ...nodesAlone], { cwd: dir, timeoutMs: 300_000 })
    return dir
  })
])
const consumer = projects.client

// ---------------------------------------------------------------------------------------------
// 4. The client alone: footprint, native modules, what Node loads, the browser bundle

const { browser, footprint } = await checkClientAlone(consumer, { step, run, StepFailed })
const nodesFootprint = await checkNodesAlone(nodesProject, { step, run, StepFailed })

// ---------------------------------------------------------------------------------------------
// 3a. In the embedding project: the README's program, PostgreSQL without its package, the frameworks

const embedding = projects.embedding

await step("embedding program on SQLite under plain node: a completed execution", async () => {
  const dir = join(embedding, "embedding")
  mkdirSync(dir)
  cpSync(join(repo, "examples", "embedding", "main.mjs"), join(dir, "main.mjs"))
  const { stderr, stdout } = await run(process.execPath, ["main.mjs"], { cwd: dir, timeoutMs: 60_000 })
  if (!/\bcompleted\b/.test(stdout)) {
    throw new StepFailed("the program did not print a completed execution", stdout + stderr)
  }
  return stdout
})

await step("PostgreSQL asked for without @appexec/postgres: refused with the line that installs it", () => {
  cpSync(join(here, "postgres-missing.mjs"), join(embedding, "postgres-missing.mjs"))
  return run(process.execPath, ["postgres-missing.mjs"], { cwd: embedding, timeoutMs: 60_000 })
})

await step(
  "the Express and Fastify examples, each with its framework added: route, API under /appexec, SIGTERM",
  async () => {
    const frameworks = ["express", "fastify"].map((name) => {
      const version = readJson(join(repo, "examples", name, "package.json")).devDependencies[name]
      mkdirSync(join(embedding, name))
      cpSync(join(repo, "examples", name, "main.mjs"), join(embedding, name, "main.mjs"))
      return `${name}@${version}`
    })
    await npm(["install", ...frameworks], { cwd: embedding, timeoutMs: 300_000 })
    cpSync(join(here, "frameworks.mjs"), join(embedding, "frameworks.mjs"))
    return run(process.execPath, ["frameworks.mjs"], { cwd: embedding, timeoutMs: 120_000 })
  }
)

// ---------------------------------------------------------------------------------------------
// 3b. The installed `appexec serve`; 3c. a consumer with the client alone

/** Starts `appexec serve`; resolves with its URL and API key once it has printed them. */
const startServer = () =>
  new Promise((resolve, reject) => {
    const data = join(tmp, "serve-data")
    const args = ["serve", "--port", "0", "--data", data, "--allow-private-networks"]
    const child = spawn(join(projects.command, "node_modules", ".bin", "appexec"), args, {
      cwd: projects.command,
      stdio: ["ignore", "pipe", "pipe"]
    })
    children.add(child)
    let stdout = ""
    let stderr = ""
    const output = () => `$ appexec ${args.join(" ")}\n${stdout}${stderr}`
    const exited = new Promise((done) => child.on("close", (code, signal) => done({ code, signal })))
    const timer = setTimeout(
      () => reject(new StepFailed("appexec serve printed no URL and key within 30 s", output())),
      30_000
    )
    child.on("error", (error) => reject(new StepFailed(`appexec serve: ${error.message}`, output())))
    exited.then(({ code, signal }) => {
      children.delete(child)
      clearTimeout(timer)
      reject(new StepFailed(`appexec serve exited early (code ${code}, signal ${signal})`, output()))
    })
    // The listening line is a log line (stderr); the key is the command's own output (stdout).
    const check = () => {
      const url = /listening on (http:\/\/[^\s"]+)/.exec(stderr)?.[1]
      const key = /\(shown once, keep it\): (\S+)/.exec(stdout)?.[1]
      if (url && key) {
        clearTimeout(timer)
        resolve({ child, url, key, exited, output })
      }
    }
    child.stderr.on("data", (chunk) => {
      stderr += chunk
      check()
    })
    child.stdout.on("data", (chunk) => {
      stdout += chunk
      check()
    })
  })

const server = await step("appexec serve --port 0 (node_modules/.bin/appexec): URL and API key printed", startServer)

await step(
  "a consumer with @appexec/client alone: Greeting by name to completed, webhook verified by @appexec/client/node",
  async () => {
    cpSync(join(here, "consumer.mjs"), join(consumer, "consumer.mjs"))
    const { stdout } = await run(process.execPath, ["consumer.mjs"], {
      cwd: consumer,
      env: { APPEXEC_BASE_URL: server.url, APPEXEC_API_KEY: server.key },
      timeoutMs: 60_000
    }).catch((error) => {
      throw error instanceof StepFailed
        ? new StepFailed(error.message, `${error.output}\n--- server ---\n${server.output()}`)
        : error
    })
    if (!/webhook verified/.test(stdout)) throw new StepFailed("the consumer did not verify a webhook", stdout)
  }
)

await step("SIGTERM: appexec serve stops with exit code 0", async () => {
  server.child.kill("SIGTERM")
  const timeout = new Promise((resolve) => setTimeout(() => resolve({ code: null, signal: "timeout" }), 20_000))
  const { code, signal } = await Promise.race([server.exited, timeout])
  children.delete(server.child)
  if (code !== 0) {
    throw new StepFailed(`appexec serve ended with code ${code}${signal ? ` (${signal})` : ""}`, server.output())
  }
})

// ---------------------------------------------------------------------------------------------
// Summary

const rows = packed.map((p) => [p.name, kib(p.size), kib(p.unpackedSize), String(p.files.length)])
const widths = [0, 1, 2, 3].map((i) =>
  Math.max(...[["package", "tarball", "unpacked", "files"], ...rows].map((r) => r[i].length))
)
const line = (r) => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join("  ")
console.log(`\n${line(["package", "tarball", "unpacked", "files"])}`)
for (const r of rows) console.log(line(r))
const optional = footprint.optionalNative.map((n) =>
  `${n.name}${n.scripts.length > 0 ? ` (${n.scripts.join(", ")} script)` : ""}${
    n.addons.length > 0 ? ` (${n.addons.length} native file${n.addons.length === 1 ? "" : "s"})` : ""
  }`
)
console.log(`
@appexec/client installed alone: ${footprint.packages} packages, ${mib(footprint.bytes)} on disk
  native modules: none required${
  optional.length > 0 ? `; optional, never loaded by the client: ${optional.join(", ")}` : ""
}
  browser bundle: ${kib(browser.minified)} minified, ${kib(browser.gzipped)} gzipped
@appexec/nodes installed alone: ${nodesFootprint.packages} packages, ${
  mib(nodesFootprint.bytes)
} on disk, no sharp, no ffmpeg
attw: ${
  lints.reduce((n, l) => n + l.entrypoints, 0)
} entry points in ${lints.length} packages, no problem under the esm-only profile; publint: no warning
pack test passed in ${seconds(Date.now() - startedAt)}`)
