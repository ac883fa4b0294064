/**
 * `appexec apps import-comfyui`: a ComfyUI workflow exported in API format becomes a public app in
 * one command, its parameters those of `--param`; a UI-format export and a `--param` naming no
 * input are refused with what to do, and nothing is imported.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { textToImage, uiFormat } from "../../nodes-comfyui/test/support/Workflows.js"
import { bin } from "./support/Bin.js"
import { tempDataDir } from "./support/ServeProcess.js"

const appexec = (...args: Array<string>) =>
  Effect.async<{ stdout: string; stderr: string; code: number }>((resume) => {
    execFile(process.execPath, [bin, ...args], (error, stdout, stderr) =>
      resume(Effect.succeed({ stdout, stderr, code: error === null ? 0 : Number(error.code ?? 1) })))
  })

describe("appexec apps import-comfyui", () => {
  it.scopedLive(
    "makes a public app of an API-format workflow; refuses a UI export and a wrong --param",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDataDir
        const api = join(dir, "workflow_api.json")
        const ui = join(dir, "workflow.json")
        writeFileSync(api, JSON.stringify(textToImage))
        writeFileSync(ui, JSON.stringify(uiFormat))
        const data = ["--data", join(dir, "data")]
        const made = yield* appexec(
          "apps",
          "import-comfyui",
          api,
          "--name",
          "ComfyUI text to image",
          "--param",
          "prompt=Positive.text",
          "--param",
          "seed=3.seed",
          "--public",
          ...data
        )
        expect(made.code, made.stderr).toBe(0)
        const appId = made.stdout.trim()
        expect(appId).toMatch(/^[0-9a-f-]{36}$/)
        expect((yield* appexec("apps", "list", ...data)).stdout).toContain(`${appId}\tpublic\tComfyUI text to image`)

        const refused = yield* appexec("apps", "import-comfyui", ui, "--name", "UI", "--public", ...data)
        expect(refused.code).not.toBe(0)
        expect(refused.stderr).toContain("Export (API)")
        const wrong = yield* appexec(
          "apps",
          "import-comfyui",
          api,
          "--name",
          "W",
          "--param",
          "m=3.model",
          "--public",
          ...data
        )
        expect(wrong.code).not.toBe(0)
        expect(wrong.stderr).toContain("linked to node '4'")
        expect(
          (yield* appexec("apps", "list", ...data)).stdout.trim().split("\n").filter((l) => l.includes("\tpublic\t"))
        )
          .not.toContainEqual(expect.stringContaining("\tUI"))
      }),
    60_000
  )
})
