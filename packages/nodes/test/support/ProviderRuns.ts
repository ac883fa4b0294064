/**
 * The set-up the provider node tests share (`provider.fal`, `provider.replicate`,
 * `provider.openai`, `http.job`): the instance with its random numbers fixed, a secret set in its
 * store, an app imported and started, its end awaited, its log read, and the test clock moved on
 * once the node's sleep is pending.
 */
import { Ids } from "@appexec/api"
import { Appexec, ExecutionReports, SecretStore } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { Chunk, Effect, Layer, Logger, Random, Redacted, TestClock } from "effect"
import { layer } from "./Instance.js"

/** Sets the secret `name` to `value` through the instance's store (the instance's own, or a workspace's). */
export const setSecret = (name: string, value: string, workspaceId?: Ids.WorkspaceId) =>
  Effect.flatMap(SecretStore.SecretStore, (store) => store.set(name, Redacted.make(value), workspaceId))

/** Imports `definition` and starts it as a fresh user of `workspace`; the execution id and the principal. */
export const start = (definition: unknown, inputs: Record<string, string>, workspace = "test") =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import({ public: true, ...(definition as object) })
    const principal = yield* TestHarness.signIn(workspace)
    const started = yield* appexec.executions.start(principal, app.appId, inputs)
    return { executionId: started.executionId, principal }
  })

/** Waits for the execution's end. */
export const finish = (executionId: string) =>
  Effect.flatMap(Appexec.Appexec, (appexec) => appexec.executions.await(Ids.ExecutionId.make(executionId)))

/** Imports and starts `definition` as a fresh user of `workspace`, then waits for the execution's end. */
export const run = (definition: unknown, inputs: Record<string, string>, workspace = "test") =>
  Effect.flatMap(start(definition, inputs, workspace), ({ executionId }) => finish(executionId))

/** The execution's log lines as `level: message`. */
export const logOf = (executionId: string) =>
  Effect.gen(function*() {
    const reports = yield* ExecutionReports.ExecutionReports
    const kept = yield* reports.logs(Ids.ExecutionId.make(executionId))
    return kept.lines.map(({ report }) => (report._tag === "Log" ? `${report.level}: ${report.message}` : ""))
  })

/** Waits until a sleep that ends `millis` from now is pending on the test clock. */
export const sleepPending = (millis: number) =>
  Effect.gen(function*() {
    const wake = (yield* TestClock.currentTimeMillis) + millis
    while (!Chunk.some(yield* TestClock.sleeps(), (at) => at === wake)) yield* Effect.yieldNow()
  })

/** Waits until a sleep that ends `millis` from now is pending on the test clock, then passes it. */
export const pass = (millis: number) => Effect.zipRight(sleepPending(millis), TestClock.adjust(millis))

/** The instance, its random numbers fixed at 0.5: a first backoff of exactly 750 ms. */
export const instance = () => layer().pipe(Layer.provide(Layer.setRandom(Random.fixed([0.5]))))

/** The instance with a logger that keeps every operator log line in `logged`. */
export const capturing = (logged: Array<string>) =>
  instance().pipe(
    Layer.provide(
      Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ message }) => logged.push(String(Array.isArray(message) ? message.join(" ") : message)))
      )
    )
  )
