/**
 * The compiled `appexec` command, as users run it: `node dist/appexec.js`, no TypeScript loader.
 * `npm test` builds it first (`pretest`); a test run without a build fails here with the reason.
 */
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

/** Path of the compiled command. */
export const bin = fileURLToPath(new URL("../../dist/appexec.js", import.meta.url))

if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` before these tests (npm test does)`)

/** Runs `appexec …args` with `env` added to the environment to completion; stdout, stderr and exit code. */
export const appexec = (env: Record<string, string>, ...args: Array<string>) =>
  Effect.async<{ stdout: string; stderr: string; code: number }>((resume) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, ...env } },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ stdout, stderr, code: error === null ? 0 : Number(error.code ?? 1) }))
    )
  })
