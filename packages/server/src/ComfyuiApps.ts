/**
 * The ComfyUI example apps: the definitions in `<apps dir>/comfyui/` ("ComfyUI text to image",
 * the standard SD 1.5 workflow), which run on the instance's ComfyUI servers. They are imported
 * as public apps at a start of `serve` with `--comfyui` (never without: their runs could only
 * fail), each only while no public app has its name; an app once imported stays as it is.
 */
import { Appexec, AppStore, StorageLock } from "@appexec/core"
import { Effect, Either, Option } from "effect"
import { join } from "node:path"
import { readDefinitions } from "./Bootstrap.js"

/** The directory of the ComfyUI example apps under an apps directory. */
export const directoryOf = (appsDir: string) => join(appsDir, "comfyui")

/** Imports the ComfyUI example apps of `appsDir` that are absent; answers the names imported. */
export const importAbsent = (appsDir: string) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const apps = yield* AppStore.AppStore
    const dir = directoryOf(appsDir)
    const imported: Array<string> = []
    for (const { definition, file } of yield* readDefinitions(dir)) {
      const name = Either.isRight(definition) ? (definition.right as { name?: unknown }).name : undefined
      if (Either.isLeft(definition) || typeof name !== "string") {
        yield* Effect.logWarning(`app ${join(dir, file)} was not imported: it is not an app definition`)
        continue
      }
      const present = Effect.map(apps.findByName(null, name), Option.isSome)
      // Under the bootstrap's lock: processes that start together import it once.
      const done = yield* StorageLock.withLock(StorageLock.BOOTSTRAP)(
        Effect.flatMap(present, (found) =>
          found
            ? Effect.succeed(false)
            : appexec.apps.import(definition.right, { owner: { public: true } }).pipe(Effect.as(true)))
      ).pipe(Effect.either)
      if (Either.isLeft(done)) {
        yield* Effect.logWarning(`app ${join(dir, file)} was not imported: ${done.left.message}`)
      } else if (done.right) {
        imported.push(name)
      }
    }
    return imported
  })
