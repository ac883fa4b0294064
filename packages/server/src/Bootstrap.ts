/**
 * The first start of `serve`: the app definitions of the apps directory become public apps, and
 * a `default` workspace gets a user and an API key, shown once. "First" is decided by the
 * database, not by the data directory: as long as there is no `default` workspace the bootstrap
 * has not happened (or did not finish), so a start interrupted before the key was made, or a
 * database created by an admin command, bootstraps on the next `serve`. Processes started together
 * bootstrap once, under the storage's lock (`runOnce`).
 */
import { Appexec, KeyStore, StorageLock } from "@appexec/core"
import { Effect, Either, Option } from "effect"
import { readdir, readFile } from "node:fs/promises"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

/**
 * The example apps shipped with this package (`apps/`), imported on the first start when `--apps`
 * is not given. Resolved from this module, which sits one level under the package as the bundled
 * command (`dist/appexec.js`) does.
 */
export const defaultAppsDir = fileURLToPath(new URL("../apps", import.meta.url))

/** What the first start created. */
export interface Bootstrapped {
  readonly key: string
  readonly apps: ReadonlyArray<{ readonly appId: string; readonly name: string }>
}

/** The workspace the first start creates; its existence marks the bootstrap as done. */
export const defaultWorkspace = "default"

/** One `*.json` of the apps directory: its parsed content, or why it could not be read or parsed. */
export interface DefinitionFile {
  readonly file: string
  readonly definition: Either.Either<unknown, string>
}

/**
 * Reads every `*.json` of `dir` (sorted by file name), each on its own: a file that cannot be
 * read or is not JSON is returned as a `Left` with the reason, the others still load. A missing
 * directory has none.
 */
export const readDefinitions = (dir: string): Effect.Effect<ReadonlyArray<DefinitionFile>> =>
  Effect.gen(function*() {
    const entries = yield* Effect.promise(() => readdir(dir).catch(() => []))
    const files = entries.filter((f) => f.endsWith(".json")).sort()
    return yield* Effect.forEach(files, (file) =>
      Effect.tryPromise({
        try: async () => JSON.parse(await readFile(join(dir, file), "utf8")) as unknown,
        catch: (cause) => (cause instanceof Error ? cause.message : String(cause))
      }).pipe(
        Effect.either,
        Effect.map((definition) => ({ file, definition }))
      ))
  })

/**
 * Imports the apps of `appsDir` as public apps and creates the `default` workspace's first key.
 * A definition that cannot be read, parsed or imported is logged as a warning and skipped. The
 * key is made last, so that an interrupted run leaves no `default` workspace and runs again.
 */
export const run = (appsDir: string) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const definitions = yield* readDefinitions(appsDir)
    const apps: Array<{ appId: string; name: string }> = []
    for (const { file, definition } of definitions) {
      const imported = Either.isLeft(definition)
        ? Either.left(`it is not valid JSON: ${definition.left}`)
        : yield* appexec.apps.import(definition.right, { owner: { public: true } }).pipe(
          Effect.mapError((error) => error.message),
          Effect.either
        )
      if (Either.isLeft(imported)) {
        yield* Effect.logWarning(`app ${join(appsDir, file)} was not imported: ${imported.left}`)
      } else {
        apps.push({ appId: imported.right.appId, name: imported.right.name })
      }
    }
    const created = yield* appexec.keys.create({ workspace: defaultWorkspace, user: "admin" })
    return { key: created.key, apps } satisfies Bootstrapped
  })

/**
 * `run` when the database has no `default` workspace yet (the first start); otherwise nothing.
 * However many processes start together on a new database, one bootstraps: the others wait for
 * the storage's lock (`StorageLock`), then find the workspace and do nothing.
 */
export const runOnce = (appsDir: string) =>
  Effect.gen(function*() {
    const keys = yield* KeyStore.KeyStore
    const bootstrapped = Effect.map(keys.findWorkspace(defaultWorkspace), Option.isSome)
    // Every start but the first stops here, without the lock.
    if (yield* bootstrapped) return Option.none<Bootstrapped>()
    return yield* StorageLock.withLock(StorageLock.BOOTSTRAP)(
      Effect.flatMap(
        bootstrapped,
        (done) => done ? Effect.succeedNone : Effect.map(run(appsDir), Option.some<Bootstrapped>)
      )
    )
  })
