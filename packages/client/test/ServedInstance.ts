/**
 * A whole appexec instance in memory (`TestHarness`) served by `@appexec/platform-node`'s Node listener
 * on a real socket (127.0.0.1, port 0), with two apps and an API key. Everything runs in the
 * test's runtime, so the server, its worker and the client all read the same `TestClock`.
 */
import { Appexec, AppexecLayer, Errors, ExecutionStore } from "@appexec/core"
import type { RateLimit } from "@appexec/http"
import { NodeListener } from "@appexec/platform-node"
import { MemoryStorage, SeededIds, TestHarness, TestOutboundHttp } from "@appexec/testing"
import { Effect, Layer, Logger, LogLevel, Ref } from "effect"

/** Greets someone after ten (virtual) seconds. */
export const greetingApp = {
  name: "Greeting",
  description: "Greets someone in the chosen tone, after ten seconds",
  public: true,
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
    { id: "pause", type: "util.delay", label: "Pause", config: { ms: 10_000 } },
    { id: "greeting", type: "output.text", label: "Greeting" }
  ],
  edges: [
    { source: "who", target: "compose" },
    { source: "tone", target: "compose" },
    { source: "compose", target: "pause" },
    { source: "pause", target: "greeting" }
  ]
}

/** Parses its input as JSON: fails (with a per-output error) when it is not JSON. */
export const parseApp = {
  name: "Parse",
  description: "Echoes its input as JSON",
  public: true,
  nodes: [
    { id: "text", type: "input.text", label: "Text", config: { name: "text", required: true } },
    { id: "parsed", type: "output.json", label: "Parsed" }
  ],
  edges: [{ source: "text", target: "parsed" }]
}

/** What a test needs to reach the served instance. */
export interface Served {
  readonly baseUrl: string
  readonly apiKey: string
  readonly greetingAppId: string
  readonly parseAppId: string
}

/** Serves the instance of the surrounding `TestHarness.layer` until the scope closes. */
export const serve = (options: { readonly rateLimit?: RateLimit.RateLimitOptions } = {}) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const greeting = yield* appexec.apps.import(greetingApp, { owner: { public: true } })
    const parse = yield* appexec.apps.import(parseApp, { owner: { public: true } })
    const { key } = yield* TestHarness.signIn("consumers", "consumer")
    const { url } = yield* NodeListener.serve({ logRequests: false, rateLimit: options.rateLimit ?? { limit: 1000 } })
    return { baseUrl: url, apiKey: key, greetingAppId: greeting.appId, parseAppId: parse.appId } satisfies Served
  }).pipe(Effect.orDie)

/** The harness every client test runs on: in memory, private network addresses allowed (the webhook receiver is local). */
export const instance = TestHarness.layer()

/**
 * The same instance, except that the next `faults` reads of an execution from storage fail: the
 * server answers them with a real 500 `internal_error`. Arm it only while the worker is idle.
 */
export const instanceWithFaults = (faults: Ref.Ref<number>) => {
  // A fault fails the next reads of an execution, as records or as views (what a poll reads).
  const faulty = <A>(read: Effect.Effect<A, Errors.StorageError>) =>
    Ref.modify(faults, (n) => [n, Math.max(0, n - 1)] as const).pipe(
      Effect.flatMap((n) =>
        n > 0 ? Effect.fail(new Errors.StorageError({ operation: "executions.get", cause: "injected fault" })) : read
      )
    )
  const faultyReads = Layer.effect(
    ExecutionStore.ExecutionStore,
    Effect.map(ExecutionStore.ExecutionStore, (store) => ({
      ...store,
      get: (executionId: Parameters<typeof store.get>[0]) => faulty(store.get(executionId)),
      getView: (executionId: Parameters<typeof store.getView>[0]) => faulty(store.getView(executionId))
    }))
  )
  return AppexecLayer.make().pipe(
    Layer.provide(faultyReads),
    Layer.provideMerge(TestOutboundHttp.layer),
    Layer.provideMerge(MemoryStorage.layer),
    Layer.provideMerge(SeededIds.layer()),
    Layer.provide(Logger.minimumLogLevel(LogLevel.None))
  )
}
