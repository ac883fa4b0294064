/**
 * Builds the console before its tests (`scripts/build.mjs`: the bundle and `src/internal/Bundle.ts`),
 * so that they read the console as the sources make it now, on a fresh clone too.
 */
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"

export default function setup() {
  execFileSync(process.execPath, [fileURLToPath(new URL("../scripts/build.mjs", import.meta.url))], {
    stdio: ["ignore", "ignore", "inherit"]
  })
}
