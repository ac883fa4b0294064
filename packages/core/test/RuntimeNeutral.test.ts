/**
 * The runtime-neutral packages compile without Node's types: their build configuration gives
 * them none (`"types": []`, the base configuration's), and no file of `@types/node` enters their
 * program through a dependency either. A Node global (`setImmediate`, `Buffer`, `process`) or a
 * `node:` import in their sources then fails `tsc -b`. The Node adapters are in
 * `@appexec/platform-node` (docs/architecture.md).
 */
import { describe, expect, it } from "@effect/vitest"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const root = fileURLToPath(new URL("../../../", import.meta.url))

/** The packages that must run on any JavaScript runtime. */
const neutral = ["api", "core", "client", "http"] as const

/** The program `tsc -b` compiles for `pkg`, from its build configuration. */
const programOf = (pkg: string) => {
  const parsed = ts.getParsedCommandLineOfConfigFile(`${root}packages/${pkg}/tsconfig.build.json`, {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"))
    }
  })
  if (parsed === undefined) throw new Error(`No build configuration for ${pkg}`)
  const program = ts.createProgram({
    rootNames: parsed.fileNames,
    options: { ...parsed.options, noEmit: true },
    ...(parsed.projectReferences === undefined ? {} : { projectReferences: parsed.projectReferences })
  })
  return { types: parsed.options.types, program }
}

describe("runtime neutrality", () => {
  for (const pkg of neutral) {
    it(`@appexec/${pkg} compiles without Node's types`, () => {
      const { program, types } = programOf(pkg)
      expect(types).toEqual([])
      const own = program.getSourceFiles().filter((file) => file.fileName.includes(`/packages/${pkg}/src/`))
      expect(own.length).toBeGreaterThan(0)
      expect(program.getSourceFiles().map((file) => file.fileName).filter((name) => name.includes("/@types/node/")))
        .toEqual([])
    }, 60_000)
  }
})
