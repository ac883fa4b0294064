/**
 * Operator secrets in node runs, on the whole instance (`AppexecLayer` over memory storage): a
 * node reads a secret with `SecretStore.require` for its execution's workspace, the workspace's
 * over the instance's, as set while the instance runs; a missing secret fails the node with a
 * message naming it and the execution is kept; a secret that cannot be opened fails the node
 * without saying why to the consumer, while the operator's log says why; without a master key
 * nothing is set. The process environment (`APPEXEC_SECRET_<NAME>`) is the store's lowest layer:
 * a name the store holds for neither the workspace nor the instance is read there, and masked.
 * No value reaches an output error, the log or the workflow graph.
 */
import { Ids } from "@appexec/api"
import { Appexec, NodeType, Redactor, SealedSecretStore, SecretStore } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Redacted, Schema, TestClock } from "effect"
import * as LogCapture from "./fixtures/LogCapture.js"

/** A node that reads the secret its config names and yields how long it is (never the value). */
const usesSecret = NodeType.defineNode({
  type: "test.secret",
  description: "Reads a secret.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({ secret: SecretStore.SecretName }),
  run: ({ config, execution }) =>
    Effect.map(
      SecretStore.require(config.secret, execution.workspaceId),
      (value) => NodeType.NodeValue.text(`${Redacted.value(value).length} characters`)
    )
})

const app = {
  name: "Secretive",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", config: { name: "prompt" } },
    { id: "call", type: "test.secret", label: "Call", config: { secret: "API_TOKEN" } },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [{ source: "prompt", target: "call" }, { source: "call", target: "out" }]
}

const masterKey = Redacted.make(new Uint8Array(32).fill(3))

const instance = (
  config: { masterKey?: Redacted.Redacted<Uint8Array> } = { masterKey },
  environment?: Readonly<Record<string, string>>
) => TestHarness.layer({ nodes: [usesSecret], config, ...(environment === undefined ? {} : { environment }) })

/** Imports the app, signs into `workspace`, runs it to its end; the principal and the finished record. */
const runIn = (workspace: string) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const { appId } = yield* appexec.apps.import(app)
    const principal = yield* TestHarness.signIn(workspace)
    const { executionId } = yield* appexec.executions.start(principal, appId, { prompt: "x" })
    const waiting = yield* Effect.fork(appexec.executions.await(executionId))
    yield* TestClock.adjust("1 second")
    return { principal, appId, record: yield* Fiber.join(waiting) }
  })

const outputOf = (record: { readonly outputs: ReadonlyArray<unknown> }) => JSON.stringify(record.outputs)

describe("secrets in node runs", () => {
  it.scoped("a missing secret fails the node with a message naming it; the execution is kept", () =>
    Effect.gen(function*() {
      const { principal, record } = yield* runIn("acme")
      expect(record.status).toBe("failed")
      expect(outputOf(record)).toContain(
        "The secret API_TOKEN is not set (an operator sets it with: appexec secrets set API_TOKEN)."
      )
      const kept = yield* (yield* Appexec.Appexec).executions.get(principal, record.executionId)
      expect(kept.status).toBe("failed")
    }).pipe(Effect.provide(instance())))

  it.scoped("a node reads the workspace's secret over the instance's, as set while the instance runs", () =>
    Effect.gen(function*() {
      const secrets = yield* SecretStore.SecretStore
      yield* secrets.set("API_TOKEN", Redacted.make("instance-value"), undefined)
      const first = yield* runIn("acme")
      expect(first.record.status).toBe("completed")
      expect(outputOf(first.record)).toContain("14 characters")

      yield* secrets.set("API_TOKEN", Redacted.make("ws"), first.principal.workspaceId)
      expect(outputOf((yield* runIn("acme")).record)).toContain("2 characters")
      // Another workspace still reads the instance's.
      expect(outputOf((yield* runIn("other")).record)).toContain("14 characters")

      // The workflow graph names nodes, never their config or a secret.
      const graph = yield* (yield* Appexec.Appexec).apps.workflow(first.principal, first.appId)
      expect(JSON.stringify(graph)).not.toContain("API_TOKEN")
    }).pipe(Effect.provide(instance())))

  it.scoped(
    "a secret that cannot be opened fails the node as unreadable; the operator's log says why, never the value",
    () => {
      const { layer: capture, lines } = LogCapture.make()
      return Effect.gen(function*() {
        const secrets = yield* SecretStore.SecretStore
        yield* secrets.set("API_TOKEN", Redacted.make("the-sealed-value"), undefined)
        // A value damaged at rest (or sealed with another master key).
        const rows = yield* SealedSecretStore.SealedSecretStore
        const [row] = yield* rows.list
        yield* rows.put({ ...row!, sealed: row!.sealed.slice(0, -4) + "AAAA" })
        const { record } = yield* runIn("acme")
        expect(record.status).toBe("failed")
        expect(outputOf(record)).toContain("The secret API_TOKEN could not be read: storage failed.")
        const logged = JSON.stringify(lines.map((l) => [l.message, l.annotations]))
        expect(logged).toContain("API_TOKEN of the instance cannot be opened")
        expect(logged).not.toContain("the-sealed-value")
        expect(outputOf(record)).not.toContain("cannot be opened")
      }).pipe(Effect.provide(Layer.provide(instance(), capture)), Effect.provide(capture))
    }
  )

  it.scoped("without a master key nothing is set, and runs find the secret not set", () =>
    Effect.gen(function*() {
      const secrets = yield* SecretStore.SecretStore
      const refused = yield* Effect.flip(secrets.set("API_TOKEN", Redacted.make("v"), undefined))
      expect(String(refused.cause)).toContain("no master key is configured")
      const { record } = yield* runIn("acme")
      expect(outputOf(record)).toContain("The secret API_TOKEN is not set")
    }).pipe(Effect.provide(instance({}))))

  it.effect("the memory store answers as the sealed one: the workspace's over the instance's, names only, refusals", () =>
    Effect.gen(function*() {
      const store = SecretStore.memory({ API_TOKEN: "instance" })
      const ws = Ids.WorkspaceId.make("00000000-0000-4000-8000-000000000001")
      yield* store.set("API_TOKEN", Redacted.make("mine"), ws)
      expect(Redacted.value((yield* store.resolve("API_TOKEN", ws)).pipe(Option.getOrThrow))).toBe("mine")
      expect(yield* store.list).toEqual([
        { name: "API_TOKEN", workspaceId: undefined, updatedAt: 0 },
        { name: "API_TOKEN", workspaceId: ws, updatedAt: 0 }
      ])
      expect(String((yield* Effect.flip(store.set("no-dash", Redacted.make("v"), undefined))).cause)).toContain(
        "is not a secret's name"
      )
      expect(yield* store.delete("API_TOKEN", ws)).toBe(true)
      expect(Redacted.value((yield* store.resolve("API_TOKEN", ws)).pipe(Option.getOrThrow))).toBe("instance")
    }))

  it.scoped("the environment is the store's lowest layer: APPEXEC_SECRET_<NAME> is <name>, under every stored one", () =>
    Effect.gen(function*() {
      const secrets = yield* SecretStore.SecretStore
      // Named in lower case, for every workspace; the store's own list stays the store's.
      const token = yield* secrets.resolve("api_token", Ids.WorkspaceId.make("00000000-0000-4000-8000-000000000009"))
      expect(Option.map(token, Redacted.value)).toEqual(Option.some("from-the-environment"))
      expect(yield* secrets.list).toEqual([])
      expect(
        Option.isNone(yield* secrets.resolve("EMPTY", Ids.WorkspaceId.make("00000000-0000-4000-8000-000000000009")))
      )
        .toBe(true)
      // A value read from the environment is masked from then on, like a stored one.
      expect((yield* Redactor.Redactor).text("echo: from-the-environment")).not.toContain("from-the-environment")
      // A stored secret of the same name comes first.
      yield* secrets.set("api_token", Redacted.make("stored"), undefined)
      const stored = yield* secrets.resolve("api_token", Ids.WorkspaceId.make("00000000-0000-4000-8000-000000000009"))
      expect(Option.map(stored, Redacted.value)).toEqual(Option.some("stored"))
    }).pipe(
      Effect.provide(
        TestHarness.layer({
          nodes: [usesSecret],
          config: { masterKey },
          environment: { APPEXEC_SECRET_API_TOKEN: "from-the-environment", APPEXEC_SECRET_EMPTY: "", OTHER: "x" }
        })
      )
    ))

  it("fromEnvironment takes every non-empty APPEXEC_SECRET_<NAME>, named in lower case", () => {
    const found = SecretStore.fromEnvironment({
      APPEXEC_SECRET_PROVIDER_TOKEN: "a",
      APPEXEC_SECRET_: "b",
      APPEXEC_SECRET_EMPTY: "",
      APPEXEC_SECRETS: "c",
      HOME: "/root"
    })
    expect([...found.keys()]).toEqual(["provider_token"])
    expect(Redacted.value(found.get("provider_token")!)).toBe("a")
  })
})
