/**
 * The provider example apps: the definitions in `<apps dir>/providers/` (OpenAI chat, OpenAI
 * image, …), which call a model provider and so need the operator's token. Such an app is
 * imported as a public app only once every secret its nodes name (`"secret": "NAME"` anywhere in
 * a node's config) is set for the whole instance (`appexec secrets set NAME`), so that no
 * consumer sees an app that can only fail. `importReady` runs at every start of `serve` and after
 * `appexec secrets set`: it imports the apps whose secrets are set and that are absent (no public
 * app of that name); an app already there is left as it is, even if an operator changed it.
 */
import { Appexec, AppStore, SecretStore, StorageLock } from "@appexec/core"
import { Effect, Either, Option } from "effect"
import { join } from "node:path"
import { readDefinitions } from "./Bootstrap.js"

/** The directory of the provider example apps under an apps directory. */
export const directoryOf = (appsDir: string) => join(appsDir, "providers")

/** The secrets a definition's nodes name: every string under a `secret` key of a node's config, in order. */
export const secretsNamedBy = (definition: unknown): ReadonlyArray<string> => {
  const found = new Set<string>()
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk)
    if (value === null || typeof value !== "object") return
    for (const [key, inner] of Object.entries(value)) {
      if (key === "secret" && typeof inner === "string") found.add(inner)
      else walk(inner)
    }
  }
  const nodes = definition !== null && typeof definition === "object" ? (definition as { nodes?: unknown }).nodes : []
  if (Array.isArray(nodes)) {
    for (const node of nodes) {
      walk(node !== null && typeof node === "object" ? (node as { config?: unknown }).config : undefined)
    }
  }
  return [...found]
}

/** What `importReady` did with one provider example app. */
export interface ProviderApp {
  readonly name: string
  readonly secrets: ReadonlyArray<string>
  /** `imported` now, `present` already, or `waiting` for the secrets not yet set. */
  readonly state: "imported" | "present" | "waiting"
  /** The secrets not set for the instance (for `waiting`). */
  readonly missing: ReadonlyArray<string>
}

/**
 * Imports each provider example app of `appsDir` whose secrets are all set for the instance and
 * which no public app of its name stands for; says what it did with each. A definition that
 * cannot be read or imported is logged as a warning and skipped.
 */
export const importReady = (appsDir: string) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const apps = yield* AppStore.AppStore
    const store = yield* SecretStore.SecretStore
    const dir = directoryOf(appsDir)
    const definitions = yield* readDefinitions(dir)
    if (definitions.length === 0) return []
    const instanceSecrets = new Set(
      (yield* store.list).filter((entry) => entry.workspaceId === undefined).map((entry) => entry.name)
    )
    const report: Array<ProviderApp> = []
    for (const { definition, file } of definitions) {
      if (Either.isLeft(definition)) {
        yield* Effect.logWarning(`app ${join(dir, file)} was not imported: it is not valid JSON: ${definition.left}`)
        continue
      }
      const name = (definition.right as { name?: unknown }).name
      if (typeof name !== "string") {
        yield* Effect.logWarning(`app ${join(dir, file)} was not imported: it has no name`)
        continue
      }
      const secrets = secretsNamedBy(definition.right)
      const missing = secrets.filter((secret) => !instanceSecrets.has(secret))
      if (missing.length > 0) {
        report.push({ name, secrets, state: "waiting", missing })
        continue
      }
      const present = Effect.map(apps.findByName(null, name), Option.isSome)
      if (yield* present) {
        report.push({ name, secrets, state: "present", missing })
        continue
      }
      // Under the bootstrap's lock: processes that start together import it once.
      const imported = yield* StorageLock.withLock(StorageLock.BOOTSTRAP)(
        Effect.flatMap(present, (found) =>
          found
            ? Effect.succeed<"present" | "imported">("present")
            : appexec.apps.import(definition.right, { owner: { public: true } }).pipe(
              Effect.as<"present" | "imported">("imported")
            ))
      ).pipe(Effect.either)
      if (Either.isLeft(imported)) {
        yield* Effect.logWarning(`app ${join(dir, file)} was not imported: ${imported.left.message}`)
        continue
      }
      report.push({ name, secrets, state: imported.right, missing })
    }
    return report
  })

/** One line for the operator about the provider example apps, or none when there is nothing to say. */
export const describe = (report: ReadonlyArray<ProviderApp>): Option.Option<string> => {
  const imported = report.filter((app) => app.state === "imported")
  const waiting = report.filter((app) => app.state === "waiting")
  const parts = [
    ...(imported.length === 0 ? [] : [
      `Imported provider example app(s): ${
        imported.map((app) => `${app.name} (${app.secrets.join(", ")})`).join(", ")
      }.`
    ]),
    ...(waiting.length === 0 ? [] : [
      `Provider example app(s) waiting for a secret: ${
        waiting.map((app) => `${app.name} (${app.missing.join(", ")})`).join(", ")
      }; set one with: appexec secrets set NAME`
    ])
  ]
  return parts.length === 0 ? Option.none() : Option.some(parts.join("\n"))
}
