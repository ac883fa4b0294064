/**
 * The README's embedding program in plain JavaScript, on SQLite: imports the Greeting app, starts
 * an execution as a workspace user and waits for it in-process. `scripts/pack-test.mjs` runs it
 * when `examples/embedding/main.mjs` (the canonical program) does not exist yet.
 */
import { Appexec, AppexecLayer, IdGenerator } from "@appexec/core"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { SqliteStorage } from "@appexec/sqlite"
import { Effect, Layer } from "effect"
import { readFile } from "node:fs/promises"

const definition = JSON.parse(await readFile(new URL("./greeting.app.json", import.meta.url), "utf8"))

const AppexecLive = AppexecLayer.make().pipe(
  Layer.provide(SqliteStorage.layer({ filename: "appexec.db" })),
  Layer.provide(IdGenerator.IdGenerator.random),
  Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: false }))
)

const program = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const app = yield* appexec.apps.import(definition, { owner: { public: true } })
  const { key } = yield* appexec.keys.create({ workspace: "default" })
  const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
  const { executionId } = yield* appexec.executions.start(principal, app.appId, { who: "Ada" })
  return yield* appexec.executions.await(executionId)
})

const done = await Effect.runPromise(program.pipe(Effect.provide(AppexecLive)))
console.log(`status: ${done.status}`)
for (const output of done.outputs) console.log(`${output.label} (${output.type}): ${output.value}`)
