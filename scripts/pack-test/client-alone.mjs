/**
 * `@appexec/client` installed alone (`scripts/pack-test.mjs`, step 4): its packages and size, no
 * native module or install script outside optional dependencies, a main entry that loads no Node
 * built-in and nothing of the server stack under plain `node`, and a bundle for the browser.
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { gzipSync } from "node:zlib"
import { footprint as footprintOf } from "./footprint.mjs"

/**
 * Runs the checks on the project `consumer` with the pack test's `step`, `run` and `StepFailed`;
 * resolves with the footprint and the browser bundle's sizes.
 */
export const checkClientAlone = async (consumer, { run, step, StepFailed }) => {
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

  return { browser, footprint }
}
