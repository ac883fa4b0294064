/**
 * What an install weighs, for the pack test: the packages of a project's `node_modules` (from
 * npm's `.package-lock.json`), their disk usage, and the native modules among them (an install
 * script, a `.node` addon or a `binding.gyp`), each said to be optional or not.
 */
import { lstatSync, readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"

const readJson = (path) => JSON.parse(readFileSync(path, "utf8"))

/** Every file under `dir` (paths relative to it), not descending into `skip`. */
export const walk = (dir, skip = () => false, base = dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (skip(path)) return []
    if (entry.isDirectory()) return walk(path, skip, base)
    return [relative(base, path)]
  })

/** Disk usage of every file under `dir`, in bytes (allocated blocks). */
export const diskUsage = (dir) =>
  walk(dir).reduce((sum, file) => {
    const stat = lstatSync(join(dir, file))
    return sum + stat.blocks * 512
  }, 0)

/**
 * The install of the project in `dir`: the name of every package under its `node_modules`, their
 * count and disk usage, and the native modules among them.
 */
export const footprint = (dir) => {
  const lock = readJson(join(dir, "node_modules", ".package-lock.json")).packages
  const installed = Object.entries(lock).filter(([path]) => path.startsWith("node_modules/"))
  const native = []
  for (const [path, entry] of installed) {
    const manifest = readJson(join(dir, path, "package.json"))
    const scripts = ["preinstall", "install", "postinstall"].filter((s) => manifest.scripts?.[s] !== undefined)
    const addons = walk(join(dir, path), (p) => p.endsWith("/node_modules")).filter((f) =>
      f.endsWith(".node") || f === "binding.gyp"
    )
    if (scripts.length > 0 || addons.length > 0 || entry.hasInstallScript) {
      native.push({ name: path.replace(/^.*node_modules\//, ""), optional: entry.optional === true, scripts, addons })
    }
  }
  return {
    names: installed.map(([path]) => path.replace(/^.*node_modules\//, "")),
    packages: installed.length,
    bytes: diskUsage(join(dir, "node_modules")),
    native
  }
}
