/**
 * The release the command reports (`appexec --version`, the traces' service version,
 * `appexec_build_info`) is the server package's version, read from its package.json, both from
 * the sources and from the built command.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { VERSION } from "../src/Version.js"
import { bin } from "./support/Bin.js"

const packageVersion = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  version: string
}).version

describe("version", () => {
  it("is the package's, from the sources and from the built command", () => {
    expect(VERSION).toBe(packageVersion)
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/)
    expect(execFileSync(process.execPath, [bin, "--version"], { encoding: "utf8" }).trim()).toBe(packageVersion)
  })
})
