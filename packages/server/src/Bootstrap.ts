/**
 * The first start on an empty data directory: the app definitions of the apps directory become
 * public apps, and a `default` workspace gets a user and an API key, shown once.
 */
import { Appexec } from "@appexec/core"
import { Effect } from "effect"
import { readdir, readFile } from "node:fs/promises"
import { join } from "node:path"

/** What the first start created. */
export interface Bootstrapped {
  readonly key: string
  readonly apps: ReadonlyArray<{ readonly appId: string; readonly name: string }>
}

/** Reads every `*.json` of `dir` (sorted by file name) as a definition; a missing directory has none. */
export const readDefinitions = (dir: string) =>
  Effect.tryPromise({
    try: async () => {
      const files = (await readdir(dir).catch(() => [])).filter((f) => f.endsWith(".json")).sort()
      return Promise.all(
        files.map(async (file) => ({ file, definition: JSON.parse(await readFile(join(dir, file), "utf8")) as unknown }))
      )
    },
    catch: (cause) => new Error(`Cannot read the app definitions in ${dir}: ${String(cause)}`)
  })

/** Imports the apps of `appsDir` as public apps and creates the `default` workspace's first key. */
export const run = (appsDir: string) =>
  Effect.gen(function* () {
    const appexec = yield* Appexec.Appexec
    const definitions = yield* readDefinitions(appsDir)
    const apps: Array<{ appId: string; name: string }> = []
    for (const { file, definition } of definitions) {
      // One broken definition should not stop the service from starting: it is reported and skipped.
      const imported = yield* appexec.apps.import(definition, { owner: { public: true } }).pipe(Effect.either)
      if (imported._tag === "Left") {
        yield* Effect.logWarning(`app ${file} was not imported: ${imported.left.message}`)
      } else {
        apps.push({ appId: imported.right.appId, name: imported.right.name })
      }
    }
    const created = yield* appexec.keys.create({ workspace: "default", user: "admin" })
    return { key: created.key, apps } satisfies Bootstrapped
  })
