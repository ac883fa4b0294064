/**
 * The lints of one tarball (`scripts/pack-test.mjs`, step 2).
 */

/**
 * publint in strict mode (warnings fail), and attw on the same tarball. attw's `esm-only`
 * profile: appexec ships ES modules only (`"type": "module"`, no `require` condition), so the
 * node10 and node16-from-CommonJS resolutions, where a `require` of an ES module is the expected
 * answer (`cjs-resolves-to-esm`), are not checked. Besides the explicit exports, every module
 * that the `./*` export pattern serves is checked as an entry point (attw skips wildcards).
 */
export const lintTarball = async (p, { bin, run, StepFailed }) => {
  await run(bin("publint"), ["run", p.tarball, "--strict"])
  const modules = p.files
    .filter((f) => /^dist\/[^/]+\.d\.ts$/.test(f) && f !== "dist/index.d.ts")
    .map((f) => `./${f.slice("dist/".length, -".d.ts".length)}`)
  const args = [
    p.tarball,
    "--profile",
    "esm-only",
    "--format",
    "json",
    ...(modules.length > 0 ? ["--include-entrypoints", ...modules] : [])
  ]
  const attw = await run(bin("attw"), args).catch((error) => {
    if (!(error instanceof StepFailed)) throw error
    // Show the problems that count, not attw's whole JSON.
    const json = error.output.slice(error.output.indexOf("{"), error.output.lastIndexOf("}") + 1)
    const problems = (() => {
      try {
        return JSON.parse(json).problems.filter((x) =>
          x.resolutionKind !== "node10" && x.resolutionKind !== "node16-cjs"
        )
      } catch {
        return undefined
      }
    })()
    throw new StepFailed(
      `attw found problems in ${p.name}`,
      problems ? JSON.stringify(problems, null, 2) : error.output
    )
  })
  const entrypoints = Object.keys(JSON.parse(attw.stdout).analysis.entrypoints).length
  return { name: p.name, entrypoints }
}
