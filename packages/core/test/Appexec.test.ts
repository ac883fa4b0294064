import { Execution } from "@appexec/api"
import { Appexec, AppexecConfig, AppexecLayer, ExecutionQueue, KeyStore } from "@appexec/core"
import { MemoryKeyStore, MemoryStorage, SeededIds, TestHarness, TestOutboundHttp } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option, Schema, TestClock } from "effect"

const app = (name: string, description?: string) => ({
  name,
  ...(description === undefined ? {} : { description }),
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    {
      id: "tone",
      type: "input.options",
      label: "Tone",
      config: { name: "tone", options: ["warm", "dry"], default: "warm" }
    },
    { id: "photo", type: "input.url", label: "Photo", config: { name: "photo" } },
    { id: "text", type: "text.template", label: "Text", config: { template: "{{prompt}} ({{tone}})" } },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [
    { source: "prompt", target: "text" },
    { source: "tone", target: "text" },
    { source: "text", target: "out" }
  ]
})

const setup = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const alice = yield* TestHarness.signIn("alice")
  const bob = yield* TestHarness.signIn("bob")
  const publicApp = yield* appexec.apps.import(app("Public Poster", "Renders posters"), { owner: { public: true } })
  const alicesApp = yield* appexec.apps.import(app("Alice Tool"), { owner: { workspaceId: alice.workspaceId } })
  return { appexec, alice, bob, publicApp, alicesApp }
})

/**
 * An instance whose key store counts its revision reads and answers each at once (as SQLite
 * does) or a moment later (as a database over a network does), and can hold one read after it
 * has seen the store (a read that answers late): `holdNextRead` arms it.
 */
const revisionReads = (answers: "at once" | "a moment later") =>
  Effect.gen(function*() {
    const store = yield* MemoryKeyStore.make
    const read = store.keyRevision ?? Effect.die("the in-memory key store keeps a revision")
    let reads = 0
    let hold: { readonly readDone: Deferred.Deferred<void>; readonly release: Deferred.Deferred<void> } | undefined
    const keyRevision = Effect.flatMap(read, (revision) => {
      reads += 1
      const held = hold
      hold = undefined
      if (held === undefined) {
        return answers === "at once"
          ? Effect.succeed(revision)
          : Effect.as(Effect.yieldNow(), revision)
      }
      return Effect.zipRight(
        Deferred.succeed(held.readDone, undefined),
        Effect.as(Deferred.await(held.release), revision)
      )
    })
    const instance = AppexecLayer.make({ config: { drainTimeout: 0 } }).pipe(
      Layer.provide(Layer.succeed(KeyStore.KeyStore, { ...store, keyRevision })),
      Layer.provideMerge(MemoryStorage.layer),
      Layer.provideMerge(SeededIds.layer()),
      Layer.provideMerge(TestOutboundHttp.layer)
    )
    const holdNextRead = Effect.gen(function*() {
      const held = { readDone: yield* Deferred.make<void>(), release: yield* Deferred.make<void>() }
      hold = held
      return { readDone: Deferred.await(held.readDone), release: Deferred.succeed(held.release, undefined) }
    })
    return { store, instance, reads: () => reads, holdNextRead }
  })

/** Resumes in the next turn of the event loop, once this turn's `setImmediate` callbacks ran. */
const nextTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

const errorTag = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (e) => e._tag)

describe("Appexec facade", () => {
  it.scoped("app detail: parameters with stable UUID ids, names as keys, defaults and options shown", () =>
    Effect.gen(function*() {
      const { appexec, alice, publicApp } = yield* setup
      const detail = yield* appexec.apps.get(alice, publicApp.appId)
      expect(detail.name).toBe("Public Poster")
      expect(detail.description).toBe("Renders posters")
      expect(detail.parameters.map((p) => p.name)).toEqual(["prompt", "tone", "photo"])
      expect(detail.parameters[1]).toMatchObject({
        type: "options",
        options: ["warm", "dry"],
        default: "warm",
        required: false
      })
      expect(detail.parameters[2]).toMatchObject({ type: "url", accept: ["image"] })
      expect(new Set(detail.parameters.map((p) => p.id)).size).toBe(3)
      const again = yield* appexec.apps.get(alice, publicApp.appId)
      expect(again.parameters.map((p) => p.id)).toEqual(detail.parameters.map((p) => p.id))
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("an app without a description has an empty description in detail and null in the list", () =>
    Effect.gen(function*() {
      const { appexec, alice, alicesApp } = yield* setup
      expect((yield* appexec.apps.get(alice, alicesApp.appId)).description).toBe("")
      const listed = (yield* appexec.apps.list(alice)).find((a) => a.appId === alicesApp.appId)
      expect(listed).toEqual({ appId: alicesApp.appId, name: "Alice Tool", description: null, isPublic: false })
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("workflow graph: nodes as {id, type, label} and edges, no config", () =>
    Effect.gen(function*() {
      const { appexec, alice, publicApp } = yield* setup
      const graph = yield* appexec.apps.workflow(alice, publicApp.appId)
      expect(graph.nodes[3]).toEqual({ id: "text", type: "text.template", label: "Text" })
      expect(graph.edges).toContainEqual({ source: "text", target: "out" })
      expect(JSON.stringify(graph)).not.toContain("{{prompt}}")
      expect(Object.keys(graph.nodes[0]!)).toEqual(["id", "type", "label"])
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("another workspace's private app is forbidden (403), an unknown app not found (404)", () =>
    Effect.gen(function*() {
      const { appexec, bob, alicesApp } = yield* setup
      expect(yield* errorTag(appexec.apps.get(bob, alicesApp.appId))).toBe("AppAccessDenied")
      expect(yield* errorTag(appexec.apps.workflow(bob, alicesApp.appId))).toBe("AppAccessDenied")
      expect(yield* errorTag(appexec.executions.start(bob, alicesApp.appId, { prompt: "x" }))).toBe("AppAccessDenied")
      expect(yield* errorTag(appexec.apps.get(bob, "00000000-0000-4000-8000-000000000000"))).toBe("AppNotFound")
      expect(yield* errorTag(appexec.apps.get(bob, "not-a-uuid"))).toBe("AppNotFound")
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("another workspace's execution is not found (404, never 403), both ways", () =>
    Effect.gen(function*() {
      const { appexec, alice, bob, publicApp, alicesApp } = yield* setup
      const alices = yield* appexec.executions.start(alice, alicesApp.appId, { prompt: "x" })
      const bobs = yield* appexec.executions.start(bob, publicApp.appId, { prompt: "y" })
      expect(yield* errorTag(appexec.executions.get(bob, alices.executionId))).toBe("ExecutionNotFound")
      expect(yield* errorTag(appexec.executions.get(alice, bobs.executionId))).toBe("ExecutionNotFound")
      expect((yield* appexec.executions.get(alice, alices.executionId)).executionId).toBe(alices.executionId)
      expect(yield* errorTag(appexec.executions.get(alice, "nope"))).toBe("ExecutionNotFound")
      // The JSON a poll answers: the same visibility, and the same execution as `get`'s.
      expect(yield* errorTag(appexec.executions.getJson(bob, alices.executionId))).toBe("ExecutionNotFound")
      expect(yield* errorTag(appexec.executions.getJson(alice, "nope"))).toBe("ExecutionNotFound")
      const json = yield* appexec.executions.getJson(alice, alices.executionId)
      const viaSchema = yield* Schema.encode(Schema.parseJson(Execution.Execution))(
        yield* appexec.executions.get(alice, alices.executionId)
      )
      expect(json).toBe(viaSchema)
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("list: own apps first, then public apps, each by name; limit bounds public apps only", () =>
    Effect.gen(function*() {
      const { appexec, alice } = yield* setup
      for (const name of ["Zeta", "alpha", "Beta"]) yield* appexec.apps.import(app(name), { owner: { public: true } })
      yield* appexec.apps.import(app("Alice Second"), { owner: { workspaceId: alice.workspaceId } })
      const all = yield* appexec.apps.list(alice, {})
      expect(all.map((a) => a.name)).toEqual(["Alice Second", "Alice Tool", "Beta", "Public Poster", "Zeta", "alpha"])
      const limited = yield* appexec.apps.list(alice, { limit: 1 })
      expect(limited.map((a) => a.name)).toEqual(["Alice Second", "Alice Tool", "Beta"])
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("list: another workspace's private apps never appear", () =>
    Effect.gen(function*() {
      const { appexec, bob } = yield* setup
      const names = (yield* appexec.apps.list(bob)).map((a) => a.name)
      expect(names).toEqual(["Public Poster"])
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("list: search matches name or description, ignoring case", () =>
    Effect.gen(function*() {
      const { appexec, alice } = yield* setup
      expect((yield* appexec.apps.list(alice, { search: "POSTER" })).map((a) => a.name)).toEqual(["Public Poster"])
      expect((yield* appexec.apps.list(alice, { search: "renders" })).map((a) => a.name)).toEqual(["Public Poster"])
      expect((yield* appexec.apps.list(alice, { search: "tool" })).map((a) => a.name)).toEqual(["Alice Tool"])
      expect(yield* appexec.apps.list(alice, { search: "nothing like it" })).toEqual([])
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped.each([0, 101, 2.5, -1])(
    "list: limit %d is refused as an invalid request",
    (limit) =>
      Effect.gen(function*() {
        const { appexec, alice } = yield* setup
        expect(yield* errorTag(appexec.apps.list(alice, { limit }))).toBe("InvalidRequest")
      }).pipe(Effect.provide(TestHarness.layer()))
  )

  it.scoped("start refuses bad inputs and a bad webhook URL, and queues nothing", () =>
    Effect.gen(function*() {
      const { appexec, alice, publicApp } = yield* setup
      const invalid = yield* Effect.flip(appexec.executions.start(alice, publicApp.appId, { tone: "loud" }))
      expect(invalid._tag).toBe("InvalidInputs")
      expect(yield* errorTag(appexec.executions.start(alice, publicApp.appId, { prompt: "x" }, { webhook: "ftp://x" })))
        .toBe(
          "InvalidWebhookUrl"
        )
      expect(
        yield* errorTag(
          appexec.executions.start(alice, publicApp.appId, { prompt: "x" }, {
            webhook: `https://e.x/${"a".repeat(3000)}`
          })
        )
      ).toBe("InvalidWebhookUrl")
      // A control character (NUL cannot be stored on PostgreSQL) is refused, not stored.
      for (const webhook of ["https://e.x/a\u0000b", "https://e.x/a\u001fb", "https://e.x/\u007f"]) {
        expect(yield* errorTag(appexec.executions.start(alice, publicApp.appId, { prompt: "x" }, { webhook })))
          .toBe("InvalidWebhookUrl")
      }
      expect(yield* errorTag(appexec.executions.start(alice, publicApp.appId, "prompt"))).toBe("InvalidRequest")
      const queue = yield* ExecutionQueue.ExecutionQueue
      expect(Option.isNone(yield* ExecutionQueue.claimOne(queue, "probe", 1000))).toBe(true)
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

  it.scoped("re-importing the same definition keeps the workflowId; a change makes a new one; executions keep theirs", () =>
    Effect.gen(function*() {
      const { appexec, alice } = yield* setup
      const first = yield* appexec.apps.import(app("Versioned"), { owner: { public: true } })
      const before = yield* appexec.executions.start(alice, first.appId, { prompt: "x" })
      const same = yield* appexec.apps.import(app("Versioned"), { owner: { public: true } })
      expect(same.appId).toBe(first.appId)
      const again = yield* appexec.executions.start(alice, first.appId, { prompt: "x" })
      expect(again.workflowId).toBe(before.workflowId)
      const changed = yield* appexec.apps.import(app("Versioned", "now with a description"), {
        owner: { public: true }
      })
      expect(changed.appId).toBe(first.appId)
      const after = yield* appexec.executions.start(alice, first.appId, { prompt: "x" })
      expect(after.workflowId).not.toBe(before.workflowId)
      const waiting = yield* Effect.fork(appexec.executions.await(before.executionId))
      yield* TestClock.adjust(0)
      expect((yield* Fiber.join(waiting)).workflowId).toBe(before.workflowId)
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("an invalid definition is refused on import with every problem", () =>
    Effect.gen(function*() {
      const { appexec } = yield* setup
      const error = yield* Effect.flip(
        appexec.apps.import({ name: "Bad", nodes: [{ id: "x", type: "nope" }], edges: [] })
      )
      expect(error._tag).toBe("InvalidAppDefinition")
      expect(error.message).toContain("node 'x': unknown node type 'nope' (registered types: input.text, input.options")
      expect(error.message).toContain("the app has no output node")
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("a private app needs an owner", () =>
    Effect.gen(function*() {
      const { appexec } = yield* setup
      expect(yield* errorTag(appexec.apps.import(app("Ownerless")))).toBe("InvalidRequest")
    }).pipe(Effect.provide(TestHarness.layer())))
})

describe("API keys (docs/api.md#authentication, docs/api.md)", () => {
  it.scoped("a key is prefixed, stored only as a hash, and accepted in either header", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const config = yield* AppexecConfig.AppexecConfig
      const created = yield* appexec.keys.create({ workspace: "w", user: "u" })
      expect(created.key.startsWith(config.keyPrefix)).toBe(true)
      expect(created.record.hash).not.toContain(created.key.slice(config.keyPrefix.length))
      expect(created.record.hint).toBe(created.key.slice(0, config.keyPrefix.length + 6))
      const viaHeader = yield* appexec.keys.authenticate({ "x-api-key": created.key })
      const viaBearer = yield* appexec.keys.authenticate({ authorization: `Bearer ${created.key}` })
      expect(viaHeader).toEqual(viaBearer)
      expect(viaHeader).toEqual({
        workspaceId: created.workspace.workspaceId,
        userId: created.user.userId,
        apiKeyId: created.record.apiKeyId
      })
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("missing, malformed, unknown and revoked keys are refused, each with its reason", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const created = yield* appexec.keys.create({ workspace: "w" })
      const reason = (headers: Parameters<typeof appexec.keys.authenticate>[0]) =>
        Effect.map(
          Effect.flip(appexec.keys.authenticate(headers)),
          (e) => (e._tag === "Unauthorized" ? e.reason : e._tag)
        )
      expect(yield* reason({})).toBe("missing")
      expect(yield* reason({ "x-api-key": "sk_wrongprefix" })).toBe("malformed")
      expect(yield* reason({ authorization: `Basic ${created.key}` })).toBe("malformed")
      expect(yield* reason({ "x-api-key": `${created.key.slice(0, -1)}${created.key.endsWith("A") ? "B" : "A"}` }))
        .toBe("unknown")
      expect(yield* appexec.keys.revoke(created.record.hint)).toBe(1)
      expect(yield* reason({ "x-api-key": created.key })).toBe("revoked")
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("a key that authenticated, then is revoked in the store by someone else, is refused from the next turn on", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const store = yield* KeyStore.KeyStore
      const created = yield* appexec.keys.create({ workspace: "w" })
      const other = yield* appexec.keys.create({ workspace: "w", user: "other" })
      for (let i = 0; i < 3; i++) yield* appexec.keys.authenticate({ "x-api-key": created.key })
      yield* appexec.keys.authenticate({ "x-api-key": other.key })
      // Straight in the store, as `appexec keys revoke` in another process does: not through this facade.
      expect(yield* store.revokeKey(created.record.apiKeyId, 1)).toBe(1)
      // The requests of this turn are checked against this turn's read, made before the revocation...
      expect((yield* appexec.keys.authenticate({ "x-api-key": created.key })).apiKeyId).toBe(created.record.apiKeyId)
      // ...those of the next turn against a read made after it.
      yield* nextTurn
      const refused = yield* Effect.flip(appexec.keys.authenticate({ "x-api-key": created.key }))
      expect(refused).toMatchObject({ _tag: "Unauthorized", reason: "revoked" })
      expect((yield* appexec.keys.authenticate({ "x-api-key": other.key })).apiKeyId).toBe(other.record.apiKeyId)
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("a read of the key revision is reused by every authentication of its turn; the next turn reads again", () =>
    Effect.gen(function*() {
      const keys = yield* revisionReads("at once")
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const created = yield* appexec.keys.create({ workspace: "w" })
        const headers = { "x-api-key": created.key }
        yield* nextTurn
        const before = keys.reads()
        for (let i = 0; i < 3; i++) yield* appexec.keys.authenticate(headers)
        yield* Effect.all(Array.from({ length: 5 }, () => appexec.keys.authenticate(headers)), {
          concurrency: "unbounded"
        })
        expect(keys.reads() - before).toBe(1)
        yield* nextTurn
        yield* appexec.keys.authenticate(headers)
        yield* appexec.keys.authenticate(headers)
        expect(keys.reads() - before).toBe(2)
      }).pipe(Effect.provide(keys.instance))
    }))

  it.scoped("a key revoked through the facade is refused by the very next request, in the same turn", () =>
    Effect.gen(function*() {
      const keys = yield* revisionReads("at once")
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const created = yield* appexec.keys.create({ workspace: "w" })
        const other = yield* appexec.keys.create({ workspace: "w", user: "other" })
        yield* nextTurn
        const before = keys.reads()
        // Cached, under this turn's read.
        yield* appexec.keys.authenticate({ "x-api-key": created.key })
        yield* appexec.keys.authenticate({ "x-api-key": other.key })
        expect(yield* appexec.keys.revoke(created.record.hint)).toBe(1)
        const refused = yield* Effect.flip(appexec.keys.authenticate({ "x-api-key": created.key }))
        expect(refused).toMatchObject({ _tag: "Unauthorized", reason: "revoked" })
        expect((yield* appexec.keys.authenticate({ "x-api-key": other.key })).apiKeyId).toBe(other.record.apiKeyId)
        // One read before the revocation, one after it.
        expect(keys.reads() - before).toBe(2)
      }).pipe(Effect.provide(keys.instance))
    }))

  it.scoped("authentications made while a read of the key revision is under way share the next one; later ones of the turn reuse it; the next turn reads again", () =>
    Effect.gen(function*() {
      const keys = yield* revisionReads("a moment later")
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const created = yield* appexec.keys.create({ workspace: "w" })
        const headers = { "x-api-key": created.key }
        yield* nextTurn
        const before = keys.reads()
        const principals = yield* Effect.all(Array.from({ length: 5 }, () => appexec.keys.authenticate(headers)), {
          concurrency: "unbounded"
        })
        expect(principals.map((p) => p.apiKeyId)).toEqual(Array(5).fill(created.record.apiKeyId))
        // The first reads; the four that began while its read was under way share the next.
        expect(keys.reads() - before).toBe(2)
        yield* appexec.keys.authenticate(headers)
        expect(keys.reads() - before).toBe(2)
        yield* nextTurn
        yield* appexec.keys.authenticate(headers)
        expect(keys.reads() - before).toBe(3)
      }).pipe(Effect.provide(keys.instance))
    }))

  it.scoped("a read of the key revision under way when an authentication begins is not reused: a key revoked before it began is refused", () =>
    Effect.gen(function*() {
      const keys = yield* revisionReads("a moment later")
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const created = yield* appexec.keys.create({ workspace: "w" })
        const headers = { "x-api-key": created.key }
        yield* nextTurn
        const before = keys.reads()
        // Cached under the revision before the revocation; in a later turn, which reads again.
        yield* appexec.keys.authenticate(headers)
        yield* nextTurn
        // A request whose read has seen the store and not yet answered...
        const held = yield* keys.holdNextRead
        const early = yield* Effect.fork(appexec.keys.authenticate(headers))
        yield* held.readDone
        // ...then a revocation committed by another process, then a request.
        expect(yield* keys.store.revokeKey(created.record.apiKeyId, 1)).toBe(1)
        const late = yield* Effect.fork(Effect.flip(appexec.keys.authenticate(headers)))
        yield* Effect.yieldNow()
        yield* held.release
        // The first arrived before the revocation: it may pass. The second may not.
        expect((yield* Fiber.join(early)).apiKeyId).toBe(created.record.apiKeyId)
        expect(yield* Fiber.join(late)).toMatchObject({ _tag: "Unauthorized", reason: "revoked" })
        expect(keys.reads() - before).toBe(3)
      }).pipe(Effect.provide(keys.instance))
    }))
})
