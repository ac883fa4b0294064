/**
 * `@appexec/nodes` installed alone (`scripts/pack-test.mjs`, step 5): no sharp and no ffmpeg come
 * with it (they are `@appexec/nodes-image`'s and `@appexec/nodes-video`'s), and its node types
 * load under plain `node`.
 */
import { footprint as footprintOf } from "./footprint.mjs"

/**
 * Runs the checks on the project `dir`, where `@appexec/nodes` was installed alone, with the pack
 * test's `step`, `run` and `StepFailed`; resolves with its footprint.
 */
export const checkNodesAlone = (dir, { run, step, StepFailed }) =>
  step("@appexec/nodes alone: no sharp, no ffmpeg; its node types load under plain node", async () => {
    const installed = footprintOf(dir)
    const media = installed.names.filter((name) => /^(sharp|@img\/|@ffmpeg-installer\/)/.test(name))
    if (media.length > 0) throw new StepFailed("@appexec/nodes brings image or video code", media.join("\n"))
    const { stdout } = await run(process.execPath, [
      "--input-type=module",
      "-e",
      "const { builtinNodes } = await import(\"@appexec/nodes\"); console.log(builtinNodes.map((n) => n.type).join(\" \"))"
    ], { cwd: dir })
    if (!/\bhttp\.request\b/.test(stdout) || !/\boutput\.image\b/.test(stdout)) {
      throw new StepFailed("@appexec/nodes did not list its node types", stdout)
    }
    return installed
  })
