/**
 * Apps directories for process tests: one public app (`prompt` → `util.delay` → `out`) that waits
 * before it answers, written to a temporary directory for `serve --apps` and removed with the scope.
 */
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** The directory of one app named `name` that waits `ms` (with `timeoutSeconds`, when given). */
export const delayApps = (options: { readonly name: string; readonly ms: number; readonly timeoutSeconds?: number }) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = mkdtempSync(join(tmpdir(), "appexec-apps-"))
      writeFileSync(
        join(dir, `${options.name.toLowerCase()}.json`),
        JSON.stringify({
          name: options.name,
          public: true,
          ...(options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds }),
          nodes: [
            { id: "prompt", type: "input.text", config: { name: "prompt" } },
            { id: "wait", type: "util.delay", config: { ms: options.ms } },
            { id: "out", type: "output.text", label: "Out" }
          ],
          edges: [{ source: "prompt", target: "wait" }, { source: "wait", target: "out" }]
        })
      )
      return dir
    }),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/** "Slow": an app that waits 10 minutes (within an hour's timeout), for runs a test stops or takes over. */
export const slowApps = delayApps({ name: "Slow", ms: 600_000, timeoutSeconds: 3600 })

/** A JSON request, answered with its status and its body's `data`. */
export const json = <A = Record<string, unknown>>(url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, data: ((await response.json()) as { readonly data: A }).data }
  })
