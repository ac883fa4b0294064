/**
 * The `appexec` command of the previous release, built from its commit for the tests of mixed
 * versions (docs/upgrading.md#what-is-guaranteed): its sources are taken from git
 * (`git archive`, which changes nothing in the repository), its third-party packages are this
 * checkout's (`node_modules` linked entry by entry, the `@appexec` packages pointing at the old
 * sources), and its bundle is made by its own build scripts (the console's assets, then the
 * command). Built once per commit and checkout into the temporary directory, then reused.
 */
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

/**
 * The commit of the previous release. Moved at each release, together with the migrations of
 * `PREVIOUS_RELEASE` in `MigrationRule.test.ts`.
 */
export const PREVIOUS_RELEASE_COMMIT = "7d36e9988a25ee5860cd364c976b5e4ebfbff455"

const root = fileURLToPath(new URL("../../../../", import.meta.url))

const run = (command: string, args: ReadonlyArray<string>, cwd: string) => {
  const ran = spawnSync(command, args, { cwd, encoding: "utf8" })
  if (ran.status !== 0) throw new Error(`${command} ${args.join(" ")} failed:\n${ran.stdout}\n${ran.stderr}`)
}

/** Links `dir/node_modules` to this checkout's, the workspace packages to the old sources of `dir`. */
const linkPackages = (dir: string) => {
  const modules = join(dir, "node_modules")
  mkdirSync(join(modules, "@appexec"), { recursive: true })
  for (const entry of readdirSync(join(root, "node_modules"))) {
    if (entry !== "@appexec") symlinkSync(join(root, "node_modules", entry), join(modules, entry))
  }
  for (const folder of readdirSync(join(dir, "packages"))) {
    const manifest = join(dir, "packages", folder, "package.json")
    if (!existsSync(manifest)) continue
    const { name } = JSON.parse(readFileSync(manifest, "utf8")) as { name: string }
    if (name.startsWith("@appexec/")) {
      symlinkSync(join(dir, "packages", folder), join(modules, name))
    }
    const own = join(root, "packages", folder, "node_modules")
    if (existsSync(own)) symlinkSync(own, join(dir, "packages", folder, "node_modules"))
  }
}

/** The path of the previous release's `appexec.js`, built on first use. */
export const previousBin: Effect.Effect<string> = Effect.sync(() => {
  // Per checkout too: the build links this checkout's node_modules, which another checkout's would not have.
  const checkout = createHash("sha256").update(root).digest("hex").slice(0, 8)
  const dir = join(tmpdir(), `appexec-previous-${PREVIOUS_RELEASE_COMMIT.slice(0, 12)}-${checkout}`)
  const bin = join(dir, "packages", "server", "dist", "appexec.js")
  if (existsSync(bin)) return bin
  const building = `${dir}.${process.pid}.building`
  rmSync(building, { recursive: true, force: true })
  mkdirSync(building, { recursive: true })
  try {
    run(
      "bash",
      ["-c", `git -C "${root}" archive --format=tar ${PREVIOUS_RELEASE_COMMIT} | tar -x -C "${building}"`],
      root
    )
    linkPackages(building)
    // The console's assets are a module the command bundles (not committed); then the command.
    run(process.execPath, ["packages/console/scripts/build.mjs"], building)
    run(process.execPath, ["scripts/bundle.mjs"], join(building, "packages", "server"))
    // Whole or not at all: another test file may be building the same at once.
    if (!existsSync(bin)) renameSync(building, dir)
    return bin
  } finally {
    rmSync(building, { recursive: true, force: true })
  }
})
