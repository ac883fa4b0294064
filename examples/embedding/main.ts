/**
 * A host Node program that embeds appexec in memory: it imports an app, starts an execution as
 * a workspace user, waits for it in-process, and prints the outputs.
 *
 * Run it with `npm start` (from the repository root) or `npx tsx examples/embedding/main.ts`.
 */
import { Appexec, AppexecLayer, IdGenerator } from "@appexec/core"
import { MemoryStorage } from "@appexec/testing"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { Effect, Layer } from "effect"
import { readFile } from "node:fs/promises"

const definition = JSON.parse(await readFile(new URL("./greeting.app.json", import.meta.url), "utf8"))

/** The whole instance: in-memory storage, random ids, a worker in this process. */
const AppexecLive = AppexecLayer.make().pipe(
  Layer.provide(MemoryStorage.layer),
  Layer.provide(IdGenerator.IdGenerator.random),
  Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: false }))
)

/** Imports the app, runs it once for `who`, and returns the finished execution. */
export const greet = (who: string) =>
  Effect.gen(function* () {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(definition, { owner: { public: true } })
    const { key } = yield* appexec.keys.create({ workspace: "default", user: "host" })
    const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
    const started = yield* appexec.executions.start(principal, app.appId, { who })
    yield* Effect.log(`started ${started.executionId} (${started.status})`)
    return yield* appexec.executions.await(started.executionId)
  }).pipe(Effect.provide(AppexecLive))

if (import.meta.url === `file://${process.argv[1]}`) {
  const done = await Effect.runPromise(greet(process.argv[2] ?? "world"))
  console.log(`status: ${done.status}`)
  for (const output of done.outputs) console.log(`${output.label} (${output.type}): ${output.value}`)
}
