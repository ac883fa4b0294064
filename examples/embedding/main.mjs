// @ts-check
/**
 * A host program that embeds appexec: SQLite in `.appexec/appexec.db` beside this file (a
 * git-ignored folder; `APPEXEC_DATA` for another), the guarded outbound client, a worker in this
 * process, and webhook signing keys sealed with the master key of `APPEXEC_MASTER_KEY` when it is
 * set. It imports an app, starts an execution as a workspace user, waits for it in-process (no
 * polling) and prints the outputs. This is the program of the README (see README.md here).
 *
 *     node examples/embedding/main.mjs Ada
 */
import { Appexec, AppexecLayer, IdGenerator, SecretSealing } from "@appexec/core"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { SqliteStorage } from "@appexec/sqlite"
import { Effect, Layer } from "effect"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const definition = {
  name: "Greeting",
  description: "Greets someone in the chosen tone",
  nodes: [
    { id: "who", type: "input.text", label: "Who", config: { name: "who", required: true } },
    {
      id: "tone",
      type: "input.options",
      label: "Tone",
      config: { name: "tone", options: ["warm", "formal"], default: "warm" }
    },
    {
      id: "compose",
      type: "text.template",
      label: "Compose",
      config: { template: "Hello {{who}}, in a {{tone}} tone." }
    },
    { id: "greeting", type: "output.text", label: "Greeting" }
  ],
  edges: [
    { source: "who", target: "compose" },
    { source: "tone", target: "compose" },
    { source: "compose", target: "greeting" }
  ]
}

// The database under .appexec/ beside this program (git-ignored), or under APPEXEC_DATA.
const dataDir = process.env.APPEXEC_DATA ?? fileURLToPath(new URL(".appexec", import.meta.url))
mkdirSync(dataDir, { recursive: true })
// 32 random bytes (`openssl rand -base64 32`) that seal the webhook signing keys in the database.
const masterKey = SecretSealing.parseMasterKey(process.env.APPEXEC_MASTER_KEY ?? "")

const AppexecLive = AppexecLayer.make({ config: { masterKey } }).pipe(
  Layer.provide(SqliteStorage.layer({ filename: join(dataDir, "appexec.db") })),
  Layer.provide(IdGenerator.IdGenerator.random),
  Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: false }))
)

const program = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const app = yield* appexec.apps.import(definition, { owner: { public: true } })
  const { key } = yield* appexec.keys.create({ workspace: "default" })
  const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
  const { executionId } = yield* appexec.executions.start(principal, app.appId, { who: process.argv[2] ?? "Ada" })
  return yield* appexec.executions.await(executionId)
})

const done = await Effect.runPromise(program.pipe(Effect.provide(AppexecLive)))
console.log(`status: ${done.status}`)
for (const output of done.outputs) console.log(`${output.label} (${output.type}): ${output.value}`)
