/**
 * An admin command of `appexec` run to completion, as an operator runs it from a shell: its
 * stdout, stderr and exit code.
 */
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { bin } from "./Bin.js"

/** What a command did. */
export interface Ran {
  readonly stdout: string
  readonly stderr: string
  readonly code: number
}

/** Runs `appexec …args` with `env` added to the environment and `input` on stdin, to completion. */
export const appexecWith = (env: Record<string, string>, input: string, ...args: ReadonlyArray<string>) =>
  Effect.async<Ran>((resume) => {
    const child = execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, APPEXEC_LOG_FORMAT: "json", ...env } },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ stdout, stderr, code: error === null ? 0 : Number(error.code ?? 1) }))
    )
    child.stdin!.end(input)
  })

/** `appexecWith` with nothing on stdin, for commands that read none. */
export const appexecIn = (env: Record<string, string>) => (...args: ReadonlyArray<string>) =>
  appexecWith(env, "", ...args)
