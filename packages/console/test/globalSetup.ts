/**
 * Builds the console before its tests (`scripts/build.mjs`: the bundle and `src/internal/Bundle.ts`),
 * so that they read the console as the sources make it now, on a fresh clone too; and unpacks the
 * browser tests' Chromium once, before their files run side by side (`Chromium.unpack`).
 */
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { unpack } from "./support/Chromium.js"

export default async function setup() {
  execFileSync(process.execPath, [fileURLToPath(new URL("../scripts/build.mjs", import.meta.url))], {
    stdio: ["ignore", "ignore", "inherit"]
  })
  await unpack()
}
