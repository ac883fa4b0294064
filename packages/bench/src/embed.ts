/**
 * What embedding appexec costs a host (docs/embedding.md#what-it-weighs), measured on the
 * embedding set installed as a host installs it: the tarballs of `@appexec/embed` and the
 * `@appexec` packages it needs (packed from this repository), with `effect`, in a fresh npm
 * project under the system's temporary directory.
 *
 * - install: packages in `node_modules` and their size on disk;
 * - import: `import("@appexec/embed")` in a fresh node process, the median of 9 (and the modules
 *   it loads, fast-check's among them);
 * - idle memory: the RSS of a bare node:http host, and of the same host with `createAppexec` on
 *   SQLite and its handler mounted, each after a garbage collection once idle, the median of 3.
 *
 * Goals: import under 400 ms, the instance under +60 MB of RSS.
 */
import { Effect } from "effect"
import { execFileSync, spawnSync } from "node:child_process"
import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type Benchmark, reportLoad } from "./Benchmark.js"
import * as TempDir from "./TempDir.js"

const repo = fileURLToPath(new URL("../../../", import.meta.url))

/** The embedding set: `@appexec/embed` and the `@appexec` packages it depends on. */
export const EMBEDDING_SET = ["api", "console", "core", "embed", "http", "platform-node", "sql", "sqlite"] as const

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10

/** Bytes on disk under `dir` (allocated blocks). */
const diskUsage = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((sum, entry) => {
    const path = join(dir, entry.name)
    return sum + (entry.isDirectory() ? diskUsage(path) : lstatSync(path).blocks * 512)
  }, 0)

const run = (command: string, args: ReadonlyArray<string>, cwd: string) =>
  execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 1_800_000 })

/** Prints the milliseconds `import("@appexec/embed")` takes in this process. */
const importProbe = `const began = performance.now()
await import("@appexec/embed")
console.log(performance.now() - began)
`

/** Prints every module URL the process resolves (a resolve hook), then imports the set. */
const resolveHooks = `export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  process.stderr.write("RESOLVED " + resolved.url + "\\n")
  return resolved
}
`

/** A host: a node:http server on port 0, with appexec mounted when `argv[2]` is `embedded`; prints its idle RSS. */
const hostProbe = `import { createServer } from "node:http"
const embedded = process.argv[2] === "embedded"
const appexec = embedded
  ? await (await import("@appexec/embed")).createAppexec({ storage: { sqlite: "data/appexec.db" }, logger: false })
  : undefined
const server = createServer((req, res) => (appexec ? appexec.handler(req, res) : res.end("ok")))
await new Promise((done) => server.listen(0, "127.0.0.1", done))
await fetch("http://127.0.0.1:" + server.address().port + "/v1/apps").then((r) => r.text())
await new Promise((done) => setTimeout(done, 2000))
globalThis.gc()
await new Promise((done) => setTimeout(done, 200))
console.log(process.memoryUsage().rss)
server.close()
await appexec?.close()
process.exit(0)
`

/** The benchmark. */
export const benchmark: Benchmark = {
  name: "embed",
  run: (report) =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* TempDir.make("embed")
      const tarballs = join(dir, "tarballs")
      const project = join(dir, "host")
      const effectVersion: string = JSON.parse(readFileSync(join(repo, "packages/core/package.json"), "utf8"))
        .dependencies.effect
      yield* Effect.sync(() => {
        mkdirSync(tarballs)
        mkdirSync(project)
        run("npm", [
          "pack",
          "--silent",
          "--pack-destination",
          tarballs,
          ...EMBEDDING_SET.flatMap((p) => ["-w", `packages/${p}`])
        ], repo)
        writeFileSync(join(project, "package.json"), JSON.stringify({ name: "host", private: true, type: "module" }))
        const files = readdirSync(tarballs).map((file) => join(tarballs, file))
        run(
          "npm",
          ["install", "--prefer-offline", "--no-audit", "--no-fund", ...files, `effect@${effectVersion}`],
          project
        )
      })
      const lock = JSON.parse(readFileSync(join(project, "node_modules/.package-lock.json"), "utf8"))
      const installed = Object.keys(lock.packages).filter((path) => path.startsWith("node_modules/")).length
      yield* report({ name: "embed.install.packages", value: installed, unit: "packages" })
      yield* report({ name: "embed.install.size", value: mb(diskUsage(join(project, "node_modules"))), unit: "MB" })

      yield* reportLoad(report, "embed", "before")
      const imports = yield* Effect.sync(() => {
        writeFileSync(join(project, "import.mjs"), importProbe)
        return Array.from({ length: 9 }, () => Number(run(process.execPath, ["import.mjs"], project)))
      })
      yield* report({ name: "embed.import.median_of_9", value: Math.round(median(imports)), unit: "ms" })
      yield* report({ name: "embed.import.goal, under", value: 400, unit: "ms" })
      const urls = yield* Effect.sync(() => {
        writeFileSync(join(project, "hooks.mjs"), resolveHooks)
        writeFileSync(
          join(project, "register.mjs"),
          "import { register } from \"node:module\"\nregister(\"./hooks.mjs\", import.meta.url)\n"
        )
        const traced = spawnSync(process.execPath, ["--import", "./register.mjs", "import.mjs"], {
          cwd: project,
          encoding: "utf8"
        })
        return new Set(traced.stderr.split("\n").filter((l) => l.startsWith("RESOLVED ")).map((l) => l.slice(9)))
      })
      yield* report({ name: "embed.import.modules", value: urls.size, unit: "modules" })
      const fastCheck = [...urls].filter((url) => url.includes("/node_modules/fast-check/")).length
      yield* report({ name: "embed.import.modules_of_fast_check", value: fastCheck, unit: "modules" })

      const rss = yield* Effect.sync(() => {
        writeFileSync(join(project, "host.mjs"), hostProbe)
        const idle = (mode: string) =>
          median(
            Array.from({ length: 3 }, () => Number(run(process.execPath, ["--expose-gc", "host.mjs", mode], project)))
          )
        return { bare: idle("bare"), embedded: idle("embedded") }
      })
      yield* report({ name: "embed.rss.bare_host_idle", value: mb(rss.bare), unit: "MB" })
      yield* report({ name: "embed.rss.host_with_appexec_idle", value: mb(rss.embedded), unit: "MB" })
      yield* report({ name: "embed.rss.added_by_appexec", value: mb(rss.embedded - rss.bare), unit: "MB" })
      yield* report({ name: "embed.rss.goal_added, under", value: 60, unit: "MB" })
      yield* reportLoad(report, "embed", "after")
    }))
}
