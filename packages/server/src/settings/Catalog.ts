/**
 * Every setting of the `appexec` command, by group, and the settings each command takes — all
 * derived from the groups, so that `serve` and `worker` share their flags by construction:
 * `serve` takes every setting of the API or of the work, `worker` those of the work, and the
 * admin commands where the state is (plus `prune`'s retention and bucket, `signing-key rotate`'s
 * grace, `media migrate`'s bucket).
 */
import * as ApiSettings from "./ApiSettings.js"
import * as NodeSettings from "./NodeSettings.js"
import * as ProcessSettings from "./ProcessSettings.js"
import * as Setting from "./Setting.js"
import * as SharedSettings from "./SharedSettings.js"
import * as StoreSettings from "./StoreSettings.js"
import * as WorkSettings from "./WorkSettings.js"

/** A group of settings as docs/cli.md shows it: a title and the settings, in order. */
export interface Group {
  readonly title: string
  readonly settings: ReadonlyArray<Setting.Any>
}

/** The groups, in the order of docs/cli.md. */
export const groups: ReadonlyArray<Group> = [
  { title: "Where the state is (every command)", settings: Object.values(StoreSettings.group) },
  { title: "The HTTP API", settings: Object.values(ApiSettings.group) },
  { title: "The work: executions, webhooks, retention", settings: Object.values(WorkSettings.group) },
  { title: "Media", settings: Object.values(SharedSettings.mediaGroup) },
  { title: "The admin port", settings: Object.values(SharedSettings.adminGroup) },
  { title: "The process", settings: Object.values(ProcessSettings.group) },
  { title: "Outbound requests", settings: Object.values(SharedSettings.outboundGroup) },
  { title: "The built-in nodes", settings: NodeSettings.all }
]

/** Every setting. */
export const all: ReadonlyArray<Setting.Any> = groups.flatMap((group) => group.settings)

/** Every setting's name: the keys a config file may have. */
export const names: ReadonlyArray<string> = all.map((setting) => setting.name)

/** The settings of where the state is, which every command takes. */
export const store: ReadonlyArray<Setting.Any> = Object.values(StoreSettings.group)

/** The settings a role uses (`Setting.usedBy`), in catalog order. */
export const usedBy = (role: Setting.Role): ReadonlyArray<Setting.Any> =>
  all.filter((setting) => Setting.usedBy(setting, role))

/** `serve`'s: every setting of the API or of the work (a `--no-worker` start refuses the work's). */
export const serve: ReadonlyArray<Setting.Any> = usedBy("serve")

/** `worker`'s: every setting of the work. */
export const worker: ReadonlyArray<Setting.Any> = usedBy("worker")

/** `prune`'s: where the state is, the retention, and the bucket whose objects go too. */
export const prune: ReadonlyArray<Setting.Any> = [
  ...store,
  WorkSettings.pruneRetention,
  SharedSettings.media,
  SharedSettings.mediaEndpoint
]

/** `media migrate`'s: where the state is, and the bucket to move media into (its flag `--to`) with its endpoint. */
export const mediaMigrate: ReadonlyArray<Setting.Any> = [...store, SharedSettings.media, SharedSettings.mediaEndpoint]

/** `signing-key rotate`'s: where the state is, and the grace (its flag `--grace`). */
export const rotate: ReadonlyArray<Setting.Any> = [...store, WorkSettings.signingKeyGrace]

/**
 * The settings of the command whose words are `words` (`["keys", "create"]`), or undefined for
 * a command that takes none (`run`, `executions watch`, help).
 */
export const ofCommand = (words: ReadonlyArray<string>): ReadonlyArray<Setting.Any> | undefined => {
  const [first, second] = words
  if (first === undefined || first === "run" || (first === "executions" && second === "watch")) return undefined
  if (first === "serve") return serve
  if (first === "worker") return worker
  if (first === "config") return serve
  if (first === "prune") return prune
  if (first === "signing-key") return rotate
  if (first === "media" && second === "migrate") return mediaMigrate
  return store
}

/**
 * The options of a command of its own that share a setting's name (`apps import-comfyui --name`
 * names the app, not the process): never taken for that setting.
 */
export const ownOptions = (words: ReadonlyArray<string>): ReadonlyArray<string> =>
  words[0] === "apps" && words[1] === "import-comfyui" ? ["name"] : []

/** The setting named `name`, if any. */
export const named = (name: string): Setting.Any | undefined => all.find((setting) => setting.name === name)
