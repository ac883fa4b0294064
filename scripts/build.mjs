#!/usr/bin/env node
/**
 * `npm run build` (and so `npm start` and `npm test`, which build first): the three steps of the
 * build, each said on stderr as it starts and with the time it took, so that a first start, which
 * builds for about a minute, does not look stuck.
 *
 * 1. the console: its Preact app bundled by esbuild (`packages/console/scripts/build.mjs`);
 * 2. the TypeScript packages: `tsc -b tsconfig.build.json`, incremental — a later build compiles
 *    only the packages whose sources changed (their `tsconfig.build.tsbuildinfo` says what it
 *    compiled), so it takes seconds;
 * 3. the `appexec` command, compiled into one module by esbuild (`packages/server/scripts/bundle.mjs`).
 *
 * A step that fails stops the build with its exit code, its own output above.
 */
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")

/** The build info file of each package `tsc -b` builds (the references of the root build config). */
const buildInfoFiles = JSON.parse(readFileSync(join(root, "tsconfig.build.json"), "utf8")).references.map(
  (/** @type {{ path: string }} */ reference) => {
    const config = join(root, reference.path)
    const file = JSON.parse(readFileSync(config, "utf8")).compilerOptions?.tsBuildInfoFile ??
      "tsconfig.build.tsbuildinfo"
    return join(dirname(config), file)
  }
)
/** Whether every package was compiled before: `tsc -b` then compiles only what changed. */
const incremental = buildInfoFiles.every((file) => existsSync(file))

const steps = [
  {
    what: "the console (esbuild)",
    command: [process.execPath, join(root, "packages/console/scripts/build.mjs")],
    cwd: root
  },
  {
    what: incremental
      ? "the TypeScript packages (tsc -b: only what changed since the last build)"
      : "the TypeScript packages (tsc -b: the first build takes about a minute; later ones only what changed)",
    command: [process.execPath, tsc, "-b", "tsconfig.build.json"],
    cwd: root
  },
  {
    what: "the appexec command (esbuild)",
    command: [process.execPath, join(root, "packages/server/scripts/bundle.mjs")],
    cwd: join(root, "packages/server")
  }
]

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`
const say = (line) => process.stderr.write(`appexec build ${line}\n`)

const startedAt = Date.now()
for (const [index, step] of steps.entries()) {
  const label = `${index + 1}/${steps.length}`
  say(`${label}: ${step.what}…`)
  const stepStartedAt = Date.now()
  const [program, ...args] = step.command
  const result = spawnSync(program, args, { cwd: step.cwd, stdio: "inherit" })
  if (result.status !== 0) {
    say(`${label}: failed after ${seconds(Date.now() - stepStartedAt)}`)
    process.exit(result.status ?? 1)
  }
  say(`${label}: done in ${seconds(Date.now() - stepStartedAt)}`)
}
say(
  `done in ${seconds(Date.now() - startedAt)}${
    incremental ? "" : "; later builds (every npm start and npm test) compile only what changed, in seconds"
  }`
)
