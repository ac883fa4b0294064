/**
 * Builds the console: the Preact app of `src/app` bundled by esbuild (minified, one script and one
 * style sheet, their names hashed from their content) and the module that holds the built files
 * as data, `src/internal/Bundle.ts` (not committed), which `tsc -b` then compiles with the rest of
 * the package. `@appexec/http` serves the console from that module: no file is read at run time,
 * so it serves the same on Node, Deno, Bun or a worker. The files are also written to
 * `dist/assets/` for whoever wants to look at them or serve them from elsewhere.
 *
 * It prints the sizes (raw and gzipped), which the module exports as `sizes`.
 *
 * ```sh
 * node packages/console/scripts/build.mjs
 * ```
 */
import { build } from "esbuild"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { basename, join } from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"

const root = fileURLToPath(new URL("..", import.meta.url))

const contentTypes = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml"
}

const contentTypeOf = (path) => {
  const type = contentTypes[path.slice(path.lastIndexOf("."))]
  if (type === undefined) throw new Error(`the console build made a file of no known type: ${path}`)
  return type
}

/** Eight characters of the content's SHA-256, in the alphabet of esbuild's own hashes. */
const hashOf = (text) =>
  createHash("sha256").update(text).digest("base64url").replace(/[-_]/g, "").slice(0, 8).toUpperCase()

/**
 * Bundles the app. Resolves with the files (`path` under the console's root, `contentType`,
 * `text`), the paths of the script, the style sheet and the icon, and the sizes.
 */
export const bundle = async () => {
  const result = await build({
    absWorkingDir: root,
    entryPoints: { app: "src/app/main.tsx" },
    outdir: "assets",
    entryNames: "[name]-[hash]",
    bundle: true,
    // @appexec packages from their TypeScript sources: this build runs before `tsc -b` makes dist/.
    conditions: ["@appexec/source"],
    write: false,
    format: "esm",
    platform: "browser",
    target: ["es2020", "chrome100", "firefox100", "safari15"],
    minify: true,
    jsx: "automatic",
    jsxImportSource: "preact",
    legalComments: "none",
    // Nothing in the page may be inline: the style sheet is a file of its own, never injected.
    loader: { ".svg": "text" },
    logLevel: "warning"
  })
  const files = result.outputFiles.map((file) => ({
    path: `assets/${basename(file.path)}`,
    contentType: contentTypeOf(file.path),
    text: file.text
  }))
  const icon = readFileSync(join(root, "src/app/icon.svg"), "utf8")
  files.push({ path: `assets/icon-${hashOf(icon)}.svg`, contentType: contentTypeOf(".svg"), text: icon })
  const find = (pattern) => {
    const found = files.find((file) => pattern.test(file.path))
    if (found === undefined) throw new Error(`the console build made no file like ${pattern}`)
    return found
  }
  const script = find(/^assets\/app-\w+\.js$/)
  const style = find(/^assets\/app-\w+\.css$/)
  const sizeOf = (file) => Buffer.byteLength(file.text)
  const gzipOf = (file) => gzipSync(file.text, { level: 9 }).length
  return {
    files,
    entry: { script: script.path, style: style.path, icon: files[files.length - 1].path },
    sizes: { script: sizeOf(script), scriptGzip: gzipOf(script), style: sizeOf(style), styleGzip: gzipOf(style) }
  }
}

/** The TypeScript source of `src/internal/Bundle.ts`. */
const moduleOf = ({ files, entry, sizes }) =>
  [
    "/**",
    " * The console's built files as data, written by scripts/build.mjs from the app in src/app. Not",
    " * committed: every build writes it again. Do not edit.",
    " */",
    "",
    "/** The built files: their path under the console's root, content type and text. */",
    "export const files: ReadonlyArray<{ readonly path: string; readonly contentType: string; readonly text: string }> = [",
    ...files.map((file) =>
      `  { path: ${JSON.stringify(file.path)}, contentType: ${JSON.stringify(file.contentType)}, text: ${
        JSON.stringify(file.text)
      } },`
    ),
    "]",
    "",
    "/** The paths the page loads. */",
    `export const entry = ${JSON.stringify(entry)} as const`,
    "",
    "/** The sizes of the script and the style sheet, in bytes: as served and gzipped (level 9). */",
    `export const sizes = ${JSON.stringify(sizes)} as const`,
    ""
  ].join("\n")

/** Builds the console into `src/internal/Bundle.ts` and `dist/assets/`; resolves with the sizes. */
export const buildConsole = async () => {
  const built = await bundle()
  mkdirSync(join(root, "src/internal"), { recursive: true })
  const module = join(root, "src/internal/Bundle.ts")
  // Written only when it changed, so that `tsc -b` finds the package up to date when it is.
  const source = moduleOf(built)
  if (!existsSync(module) || readFileSync(module, "utf8") !== source) writeFileSync(module, source)
  const assets = join(root, "dist/assets")
  rmSync(assets, { recursive: true, force: true })
  mkdirSync(assets, { recursive: true })
  for (const file of built.files) writeFileSync(join(root, "dist", file.path), file.text)
  return built.sizes
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const sizes = await buildConsole()
  const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`
  console.log(
    `console: script ${kib(sizes.script)} (${kib(sizes.scriptGzip)} gzipped), style ${kib(sizes.style)} (${
      kib(sizes.styleGzip)
    } gzipped)`
  )
}
