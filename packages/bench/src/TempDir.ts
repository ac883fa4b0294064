/**
 * Temporary directories of the benchmarks: data directories, app directories, database files.
 */
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A fresh directory `appexec-bench-<name>-…` under the system's temporary directory, removed with the scope. */
export const make = (name: string) =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), `appexec-bench-${name}-`))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )
