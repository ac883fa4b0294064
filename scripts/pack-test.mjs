#!/usr/bin/env node
/**
 * The pack-and-install test: appexec as a user gets it from the registry.
 *
 * 1. `npm pack` every publishable package (`packages/*` not `private`) and check each tarball:
 *    compiled `dist/**\/*.js` with `.d.ts` beside every module, `package.json`, `LICENSE`, no
 *    tests, no `*.tsbuildinfo`, no build output whose source is gone.
 * 2. `publint --strict` and `attw` (ESM-only profile) on every tarball.
 * 3. In fresh npm projects outside the repository (`os.tmpdir()`), install only the tarballs
 *    (and what they need from the registry), then, under plain `node` with no TypeScript loader:
 *    (a) run the embedding program on SQLite to a completed execution;
 *    (b) start the installed `appexec serve --port 0`, read its URL and API key;
 *    (c) from a project with `@appexec/client` alone, run the Greeting app by name with a
 *        webhook verified by `@appexec/client/node`; then SIGTERM the server: it must exit 0.
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
import { gzipSync } from "node:zlib"
import { footprint as footprintOf } from "./pack-test/footprint.mjs"

const repo = fileURLToPath(new URL("..", import.meta.url))
const here = fileURLToPath(new URL("./pack-test/", import.meta.url))
const bin = (name) => join(repo, "node_modules", ".bin", name)
const startedAt = Date.now()

// ---------------------------------------------------------------------------------------------
// Temp directory and child processes, removed on every exit

const tmp = mkdtempSync(join(tmpdir(), "appexec-pack-"))
/** @type {Set<import("node:child_process").ChildProcess>} */
const children = new Set()
const cleanup = () => {
  for (const child of children) child.kill("SIGKILL")
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
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    children.add(child)
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
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

const byName = new Map(packed.map((p) => [p.name, p]))
const tarballOf = (name) => {
  const p = byName.get(name)
  if (p === undefined) throw new StepFailed(`${name} is not among the packed packages`)
  return p.tarball
}

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

/**
 * publint in strict mode (warnings fail), and attw on the same tarball. attw's `esm-only`
 * profile: appexec ships ES modules only (`"type": "module"`, no `require` condition), so the
 * node10 and node16-from-CommonJS resolutions, where a `require` of an ES module is the expected
 * answer (`cjs-resolves-to-esm`), are not checked. Besides the explicit exports, every module
 * that the `./*` export pattern serves (those in folders too, such as `@appexec/nodes/http/HttpJob`;
 * not those under `internal/`) is checked as an entry point (attw skips wildcards).
 */
const lint = (p) => async () => {
  await run(bin("publint"), ["run", p.tarball, "--strict"])
  const modules = p.files
    .filter((f) => /^dist\/.+\.d\.ts$/.test(f) && !f.includes("/internal/") && f !== "dist/index.d.ts")
    .map((f) => `./${f.slice("dist/".length, -".d.ts".length)}`)
  const args = [
    p.tarball,
    "--profile",
    "esm-only",
    "--format",
    "json",
    ...(modules.length > 0 ? ["--include-entrypoints", ...modules] : [])
  ]
  const attw = await run(bin("attw"), args).catch((error) => {
    if (!(error instanceof StepFailed)) throw error
    // Show the problems that count, not attw's whole JSON.
    const json = error.output.slice(error.output.indexOf("{"), error.output.lastIndexOf("}") + 1)
    const problems = (() => {
      try {
        return JSON.parse(json).problems.filter((x) =>
          x.resolutionKind !== "node10" && x.resolutionKind !== "node16-cjs"
        )
      } catch {
        return undefined
      }
    })()
    throw new StepFailed(
      `attw found problems in ${p.name}`,
      problems ? JSON.stringify(problems, null, 2) : error.output
    )
  })
  const entrypoints = Object.keys(JSON.parse(attw.stdout).analysis.entrypoints).length
  return { name: p.name, entrypoints }
}

/** A fresh npm project (`type: module`) in the temp directory. */
const project = async (name) => {
  const dir = join(tmp, name)
  mkdirSync(dir)
  await npm(["init", "-y"], { cwd: dir })
  const manifest = readJson(join(dir, "package.json"))
  writeFileSync(join(dir, "package.json"), JSON.stringify({ ...manifest, type: "module", private: true }, null, 2))
  return dir
}

const clientAlone = ["@appexec/client", "@appexec/api", "@appexec/core"]
const nodesAlone = ["@appexec/nodes", "@appexec/api", "@appexec/core"]
const effectVersion = byName.get("@appexec/core")?.manifest.dependencies?.effect

const [lints, full, consumer, nodes] = await Promise.all([
  step(`publint --strict and attw --profile esm-only on ${packed.length} tarballs`, () => pool(packed.map(lint), 4)),
  step(`npm install every tarball (and effect@${effectVersion}) into a fresh project`, async () => {
    const dir = await project("full")
    // Every tarball brings the S3 SDK and the ffmpeg binary too: read from the cache `npm ci` filled.
    await npm(["install", "--prefer-offline", ...packed.map((p) => p.tarball), `effect@${effectVersion}`], {
      cwd: dir,
      timeoutMs: 420_000
    })
    return dir
  }),
  step(
    `npm install @appexec/client alone (with its tarballs ${clientAlone.slice(1).join(", ")}) into a fresh project`,
    async () => {
      const dir = await project("client")
      await npm(["install", ...clientAlone.map(tarballOf)], { cwd: dir, timeoutMs: 150_000 })
      return dir
    }
  ),
  step(`npm install @appexec/nodes alone (with its tarballs ${nodesAlone.slice(1).join(", ")})`, async () => {
    const dir = await project("nodes")
    await npm(["install", ...nodesAlone.map(tarballOf)], { cwd: dir, timeoutMs: 150_000 })
    return dir
  })
])

// ---------------------------------------------------------------------------------------------
// 4. The client alone: footprint, native modules, what Node loads, the browser bundle

const footprint = await step(
  "@appexec/client alone: packages, size, no native module outside optional dependencies",
  () => {
    const { bytes, native, packages } = footprintOf(consumer)
    const required = native.filter((n) => !n.optional)
    if (required.length > 0) {
      throw new StepFailed(
        "@appexec/client installs a native module or an install script outside optional dependencies",
        JSON.stringify(required, null, 2)
      )
    }
    return { packages, bytes, optionalNative: native }
  }
)

const nodesFootprint = await step(
  "@appexec/nodes alone: no sharp, no ffmpeg; its node types load under plain node",
  async () => {
    const installed = footprintOf(nodes)
    const media = installed.names.filter((name) => /^(sharp|@img\/|@ffmpeg-installer\/)/.test(name))
    if (media.length > 0) throw new StepFailed("@appexec/nodes brings image or video code", media.join("\n"))
    const { stdout } = await run(process.execPath, [
      "--input-type=module",
      "-e",
      "const { builtinNodes } = await import(\"@appexec/nodes\"); console.log(builtinNodes.map((n) => n.type).join(\" \"))"
    ], { cwd: nodes })
    if (!/\bhttp\.request\b/.test(stdout) || !/\boutput\.image\b/.test(stdout)) {
      throw new StepFailed("@appexec/nodes did not list its node types", stdout)
    }
    return installed
  }
)

await step(
  "@appexec/client's main entry loads no Node built-in and nothing of the server stack (installed dist, under node)",
  async () => {
    writeFileSync(
      join(consumer, "resolve-hooks.mjs"),
      "export async function resolve(specifier, context, next) {\n  const resolved = await next(specifier, context)\n  process.stderr.write(`RESOLVED ${resolved.url}\\n`)\n  return resolved\n}\n"
    )
    writeFileSync(
      join(consumer, "resolve-log.mjs"),
      "import { register } from \"node:module\"\nregister(\"./resolve-hooks.mjs\", import.meta.url)\n"
    )
    const { stderr } = await run(process.execPath, [
      "--import",
      "./resolve-log.mjs",
      "--input-type=module",
      "-e",
      "await import(\"@appexec/client\")"
    ], {
      cwd: consumer
    })
    const urls = stderr.split("\n").filter((l) => l.startsWith("RESOLVED ")).map((l) => l.slice("RESOLVED ".length))
    const forbidden =
      /^node:|\/node_modules\/(msgpackr|@effect\/platform-node|better-sqlite3|kysely|sharp|undici|ws)\/|\/node_modules\/@appexec\/(http|sqlite|nodes|platform-node|server|testing)\//
    const bad = urls.filter((u) => forbidden.test(u) || !u.startsWith("file:"))
    if (urls.length === 0) throw new StepFailed("the resolve hook saw no module", stderr)
    if (bad.length > 0) throw new StepFailed(`${bad.length} forbidden module(s) in the graph`, bad.join("\n"))
    if (urls.some((u) => u.endsWith("/@appexec/client/dist/node.js"))) {
      throw new StepFailed("the main entry loads @appexec/client/node")
    }
    return urls.length
  }
)

const browser = await step("@appexec/client (installed) bundles for the browser", async () => {
  const { build } = await import("esbuild")
  const result = await build({
    stdin: { contents: "export * from \"@appexec/client\"", resolveDir: consumer, loader: "js" },
    absWorkingDir: consumer,
    bundle: true,
    platform: "browser",
    format: "esm",
    minify: true,
    write: false,
    logLevel: "silent"
  }).catch((error) => {
    throw new StepFailed("esbuild could not bundle @appexec/client for the browser", error.message)
  })
  const bytes = result.outputFiles[0].contents
  return { minified: bytes.length, gzipped: gzipSync(bytes).length }
})

// ---------------------------------------------------------------------------------------------
// 3a. The embedding program on SQLite

await step("embedding program on SQLite under plain node: a completed execution", async () => {
  const dir = join(full, "embedding")
  const canonical = join(repo, "examples", "embedding", "main.mjs")
  if (existsSync(canonical)) {
    cpSync(join(repo, "examples", "embedding"), dir, {
      recursive: true,
      filter: (src) => !/\.test\.[cm]?[jt]s$|\/node_modules(\/|$)|\/package\.json$/.test(src)
    })
  } else {
    mkdirSync(dir)
    cpSync(join(here, "embedding.mjs"), join(dir, "main.mjs"))
    cpSync(join(repo, "examples", "embedding", "greeting.app.json"), join(dir, "greeting.app.json"))
  }
  const { stdout, stderr } = await run(process.execPath, ["main.mjs"], { cwd: dir, timeoutMs: 60_000 })
  if (!/\bcompleted\b/.test(stdout)) {
    throw new StepFailed("the program did not print a completed execution", stdout + stderr)
  }
  return stdout
})

// ---------------------------------------------------------------------------------------------
// 3b. The installed `appexec serve`; 3c. a consumer with the client alone

/** Starts `appexec serve`; resolves with its URL and API key once it has printed them. */
const startServer = () =>
  new Promise((resolve, reject) => {
    const data = join(tmp, "serve-data")
    const args = ["serve", "--port", "0", "--data", data, "--allow-private-networks"]
    const child = spawn(join(full, "node_modules", ".bin", "appexec"), args, {
      cwd: full,
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
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.stdout.on("data", (chunk) => {
      stdout += chunk
      const url = /listening on (http:\/\/\S+)/.exec(stdout)?.[1]
      const key = /\(shown once, keep it\): (\S+)/.exec(stdout)?.[1]
      if (url && key) {
        clearTimeout(timer)
        resolve({ child, url, key, exited, output })
      }
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
