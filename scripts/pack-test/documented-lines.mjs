/**
 * The pack and install lines of the docs, run as written (`scripts/pack-test.mjs`).
 *
 * The lines are those of the Markdown blocks tagged `pack-test` (```` ```sh fragment pack-test ````)
 * in `README.md` and `docs/install.md`. Each ends with a comment that says where it runs:
 * `# in this repository` (in a copy of the repository: its files without `node_modules`, which is
 * linked, so the build and the pack find everything and `..` is a scratch folder) or
 * `# in your project` (in a fresh npm project beside that copy, so `../appexec-tarballs` is the
 * folder the pack line filled). The same command written in both files runs once. Every line runs
 * under `bash -e -o pipefail` (the lines use brace expansion), exactly as written.
 */
import { cpSync, mkdirSync, readFileSync, symlinkSync } from "node:fs"
import { join, relative } from "node:path"

/** The documents whose `pack-test` blocks are run. */
export const documents = ["README.md", "docs/install.md"]

/** The shell blocks tagged `pack-test` in `markdown`, as their lines. */
const taggedLines = (markdown) =>
  [...markdown.matchAll(/^```(?:sh|bash)([^\n]*)\n([\s\S]*?)^```$/gm)]
    .filter((m) => m[1].trim().split(/\s+/).includes("pack-test"))
    .flatMap((m) => m[2].split("\n").map((line) => line.trim()).filter((line) => line !== ""))

/**
 * Every documented line of `repo`'s documents: where it runs (`repository` or `project`), the
 * line as written, the command before its comment (lines are told apart by it), and the
 * document it is in. A line that says neither place is an error.
 */
export const documentedLines = (repo) => {
  const lines = []
  for (const document of documents) {
    for (const line of taggedLines(readFileSync(join(repo, document), "utf8"))) {
      const comment = line.slice(line.indexOf("#") + 1).trim()
      const where = comment.startsWith("in this repository")
        ? "repository"
        : comment.startsWith("in your project")
        ? "project"
        : undefined
      if (where === undefined) {
        throw new Error(
          `${document}: a pack-test line must end with '# in this repository' or '# in your project': ${line}`
        )
      }
      const command = line.slice(0, line.indexOf("#")).trim()
      if (!lines.some((l) => l.command === command)) lines.push({ where, line, command, document })
    }
  }
  return lines
}

/** The `@appexec` packages a line installs from tarballs (`appexec-{api,core}-0.1.0.tgz` → api, core). */
export const packagesOf = (command) =>
  [...command.matchAll(/appexec-(?:\{([^}]*)\}|([a-z-]+))-\d/g)].flatMap((m) => (m[1] ?? m[2]).split(","))

/**
 * A copy of the repository under `work` (`work/appexec`), as a clone has it once installed: its
 * files without `.git`, `node_modules` and what tests leave, with the repository's
 * `node_modules` linked in, so that `npm run build` finds its tools and `..` is `work`.
 */
export const copyRepository = (repo, work) => {
  const copy = join(work, "appexec")
  mkdirSync(copy, { recursive: true })
  cpSync(repo, copy, {
    recursive: true,
    preserveTimestamps: true,
    filter: (source) => !/(^|\/)(node_modules|\.git|\.appexec|coverage)(\/|$)/.test(relative(repo, source))
  })
  symlinkSync(join(repo, "node_modules"), join(copy, "node_modules"), "dir")
  return copy
}
