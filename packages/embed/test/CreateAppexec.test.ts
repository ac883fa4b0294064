/**
 * `createAppexec` in memory: apps and executions with Promises, acting as workspaces without
 * keys, keys and secrets, errors as plain `Error`s with their code and details, the host's
 * logger, and `close()`.
 */
import { NodeType } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import {
  AppexecError,
  ConfigurationError,
  createAppexec,
  ForbiddenError,
  InvalidAppDefinitionError,
  InvalidInputsError,
  NotFoundError
} from "../src/index.js"
import { echo, greeting, memoryInstance, recorder, waiting } from "./fixtures.js"

/** The error a promise rejects with (the test fails when it resolves). */
const rejection = async (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${typeof value}`)
    },
    (error: unknown) => error
  )

describe("createAppexec", () => {
  it("imports an app without an owner for its default workspace, and runs it: start, then await", async () => {
    const { appexec } = await memoryInstance()
    const app = await appexec.apps.import(greeting)
    expect(app.isPublic).toBe(false)
    expect((await appexec.apps.list()).map((a) => a.name)).toEqual(["Greeting"])
    expect((await appexec.apps.get(app.appId)).parameters.map((p) => p.name)).toEqual(["who", "tone"])
    const started = await appexec.executions.start(app.appId, { who: "Ada" })
    expect(started.status).toBe("queued")
    const done = await appexec.executions.await(started.executionId)
    expect(done.status).toBe("completed")
    expect(done.outputs[0]?.value).toBe("Hello Ada, warm.")
    const listed = await appexec.executions.list({ status: "completed" })
    expect(listed.data.map((e) => e.executionId)).toEqual([started.executionId])
  })

  it("runs a node type of the host's own (defineNode, no @appexec/nodes)", async () => {
    const { appexec } = await memoryInstance()
    const app = await appexec.apps.import(echo)
    const done = await appexec.executions.run(app.appId, { text: "ab" })
    expect(done.outputs[0]?.value).toBe("ababab")
  })

  it("a node type that needs a service of the host's runs with it given in `services` (and does not compile without)", async () => {
    class Greeter extends Context.Tag("test/Greeter")<Greeter, { readonly word: string }>() {}
    const greet = NodeType.defineNode({
      type: "text.greet",
      description: "Greets with the host's word",
      role: "process",
      inputs: { min: 1, max: 1 },
      config: Schema.Struct({}),
      run: ({ upstream }) =>
        Effect.map(
          Greeter,
          (greeter) => NodeType.NodeValue.text(`${greeter.word} ${NodeType.NodeValue.asText(upstream[0]!.value) ?? ""}`)
        )
    })
    // Never called: it is here to fail to compile, as `Greeter` is given by no one.
    // @ts-expect-error: the node types need services that `services` does not give
    const _withoutService = () => createAppexec({ storage: { memory: true }, nodes: [greet] })
    const appexec = await createAppexec({
      storage: { memory: true },
      logger: false,
      nodes: [greet],
      services: Layer.succeed(Greeter, { word: "Howdy" })
    })
    try {
      const app = await appexec.apps.import({
        name: "Greet",
        nodes: [
          { id: "who", type: "input.text", label: "Who", config: { name: "who" } },
          { id: "greet", type: "text.greet", label: "Greet", config: {} },
          { id: "out", type: "output.text", label: "Out" }
        ],
        edges: [{ source: "who", target: "greet" }, { source: "greet", target: "out" }]
      })
      expect((await appexec.executions.run(app.appId, { who: "Ada" })).outputs[0]?.value).toBe("Howdy Ada")
    } finally {
      await appexec.close()
    }
  })

  it("as({ workspace }): each workspace sees its own apps and executions, with no key written", async () => {
    const { appexec } = await memoryInstance()
    const acme = appexec.as({ workspace: "acme" })
    const globex = appexec.as({ workspace: "globex", user: "hank" })
    const app = await acme.apps.import(greeting)
    const shared = await appexec.apps.import({ ...greeting, name: "Shared" }, { public: true })
    expect((await acme.apps.list()).map((a) => a.name)).toEqual(["Greeting", "Shared"])
    expect((await globex.apps.list()).map((a) => a.name)).toEqual(["Shared"])

    const started = await acme.executions.start(app.appId, { who: "Ada" })
    expect((await acme.executions.await(started.executionId)).status).toBe("completed")
    // Another workspace's execution is not found, and its private app is forbidden.
    expect(await rejection(globex.executions.get(started.executionId))).toBeInstanceOf(NotFoundError)
    expect(await rejection(globex.executions.await(started.executionId))).toBeInstanceOf(NotFoundError)
    const forbidden = await rejection(globex.executions.start(app.appId, { who: "Bo" }))
    expect(forbidden).toBeInstanceOf(ForbiddenError)
    expect((await globex.executions.run(shared.appId, { who: "Bo" })).status).toBe("completed")
    expect(await appexec.keys.list()).toEqual([])
  })

  it("starts and runs at a priority; one out of range is refused with invalid_request", async () => {
    const { appexec } = await memoryInstance()
    const app = await appexec.apps.import(greeting)
    const started = await appexec.executions.start(app.appId, { who: "Ada" }, { priority: 10 })
    expect((await appexec.executions.await(started.executionId)).status).toBe("completed")
    expect((await appexec.executions.run(app.appId, { who: "Ada" }, { priority: -10 })).status).toBe("completed")
    for (
      const refused of [
        await rejection(appexec.executions.start(app.appId, { who: "Ada" }, { priority: 11 })),
        await rejection(appexec.executions.run(app.appId, { who: "Ada" }, { priority: 1.5 }))
      ]
    ) {
      expect(refused).toBeInstanceOf(AppexecError)
      expect(refused).toMatchObject({
        code: "invalid_request",
        message: "`priority` must be an integer from -10 to 10 (default 0)."
      })
    }
  })

  it("errors are plain Errors with the API's code and details, usable with instanceof", async () => {
    const { appexec } = await memoryInstance()
    const app = await appexec.apps.import(greeting)
    const invalid = await rejection(appexec.executions.start(app.appId, { who: "", tone: "loud", extra: "x" }))
    expect(invalid).toBeInstanceOf(InvalidInputsError)
    expect(invalid).toBeInstanceOf(AppexecError)
    expect(invalid).toBeInstanceOf(Error)
    if (!(invalid instanceof InvalidInputsError)) throw invalid
    expect(invalid.code).toBe("invalid_inputs")
    expect(invalid.name).toBe("InvalidInputsError")
    expect(invalid.details).toEqual([
      { parameter: "extra", problem: "unknown_parameter", expected: ["who", "tone"] },
      { parameter: "who", problem: "empty" },
      { parameter: "tone", problem: "not_an_option", expected: ["warm", "formal"] }
    ])
    expect(invalid.message).toContain("'who' must not be empty")
    expect(Object.keys(invalid)).not.toContain("_tag")

    const missing = await rejection(appexec.executions.get("00000000-0000-4000-8000-000000000000"))
    expect(missing).toBeInstanceOf(NotFoundError)
    expect(missing).toMatchObject({ code: "not_found" })
    const webhook = await rejection(appexec.executions.start(app.appId, { who: "Ada" }, { webhook: "ftp://x" }))
    expect(webhook).toMatchObject({ code: "invalid_webhook_url" })
  })

  it("a run's webhook gets the events it picks, each a message of its own; events need a webhook", async () => {
    const received: Array<{ readonly headers: IncomingHttpHeaders; readonly body: { readonly type?: string } }> = []
    let completed: () => void = () => {}
    const done = new Promise<void>((resolve) => {
      completed = resolve
    })
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { readonly type?: string }
        received.push({ headers: req.headers, body })
        res.writeHead(204).end()
        // Events may come in any order (an instant run stores its start with its end): both are awaited.
        if (received.length === 2) completed()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    try {
      const { appexec } = await memoryInstance({ allowPrivateNetworks: true })
      const app = await appexec.apps.import(greeting)
      const webhook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
      const run = await appexec.executions.run(app.appId, { who: "Ada" }, {
        webhook,
        webhookEvents: ["start", "completed"]
      })
      expect(run.status).toBe("completed")
      await done
      expect(received.map((r) => r.body.type).sort()).toEqual(["completed", "start"])
      const ids = received.map((r) => r.headers["webhook-id"])
      expect(new Set(ids).size).toBe(2)
      for (const { headers } of received) {
        expect(headers["webhook-signature"]).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/)
        expect(headers["x-service-webhook-request-id"]).toBe(run.executionId)
      }
      const alone = await rejection(appexec.executions.start(app.appId, { who: "Ada" }, { webhookEvents: ["start"] }))
      expect(alone).toMatchObject({ code: "invalid_request" })
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it("an app definition with an unknown node type is refused, listing the types the instance knows", async () => {
    const { appexec } = await memoryInstance()
    const refused = await rejection(
      appexec.apps.import({
        ...echo,
        nodes: echo.nodes.map((n) => n.id === "repeat" ? { ...n, type: "text.ripeat" } : n)
      })
    )
    expect(refused).toBeInstanceOf(InvalidAppDefinitionError)
    if (!(refused instanceof InvalidAppDefinitionError)) throw refused
    expect(refused.code).toBe("invalid_app_definition")
    expect(refused.details).toEqual([{
      node: "repeat",
      message: expect.stringMatching(
        /^unknown node type 'text\.ripeat' \(registered types: input\.text, .*text\.repeat\)$/
      )
    }])
  })

  it("cancel: a running execution fails as canceled; canceling it again is execution_finished", async () => {
    const { appexec } = await memoryInstance()
    const app = await appexec.apps.import(waiting(60_000))
    const started = await appexec.executions.start(app.appId, {})
    const canceled = await appexec.executions.cancel(started.executionId)
    expect(["failed"]).toContain((await appexec.executions.await(started.executionId)).status)
    expect(canceled.executionId).toBe(started.executionId)
    expect((await appexec.executions.get(started.executionId)).errorMessage).toBe("The execution was canceled.")
    const again = await rejection(appexec.executions.cancel(started.executionId))
    expect(again).toMatchObject({ code: "execution_finished" })
  })

  it("await with a timeout rejects with code timeout; the execution goes on", async () => {
    const { appexec } = await memoryInstance()
    const app = await appexec.apps.import(waiting(60_000))
    const started = await appexec.executions.start(app.appId, {})
    const late = await rejection(appexec.executions.await(started.executionId, { timeout: "20 millis" }))
    expect(late).toMatchObject({ code: "timeout" })
    expect((await appexec.executions.get(started.executionId)).status).not.toBe("failed")
  })

  it("keys: created for a workspace, listed without the key, refused over HTTP once revoked and no longer listed", async () => {
    const { appexec } = await memoryInstance()
    const created = await appexec.keys.create({ workspace: "acme", user: "ann" })
    expect(created.key.startsWith("aex_")).toBe(true)
    const listed = await appexec.keys.list()
    expect(listed).toEqual([{
      id: created.id,
      hint: created.hint,
      workspace: "acme",
      user: "ann",
      createdAt: created.createdAt,
      lastUsedAt: null
    }])
    expect(await appexec.keys.list({ workspace: "nobody" })).toEqual([])
    const call = () => appexec.fetch(new Request("http://host/v1/apps", { headers: { "x-api-key": created.key } }))
    expect((await call()).status).toBe(200)
    expect(await appexec.keys.revoke(created.hint)).toBe(1)
    expect((await call()).status).toBe(401)
    expect(await appexec.keys.list()).toEqual([])
  })

  it("secrets: set, listed without values, deleted; a bad name is invalid_request", async () => {
    const { appexec } = await memoryInstance()
    await appexec.secrets.set("API_TOKEN", "s3cret")
    await appexec.secrets.set("API_TOKEN", "other", { workspace: "acme" })
    const listed = await appexec.secrets.list()
    expect(listed.map((s) => [s.name, s.workspaceId === null])).toEqual([["API_TOKEN", true], ["API_TOKEN", false]])
    expect(JSON.stringify(listed)).not.toContain("s3cret")
    expect(await appexec.secrets.delete("API_TOKEN", { workspace: "acme" })).toBe(true)
    expect(await appexec.secrets.delete("API_TOKEN", { workspace: "acme" })).toBe(false)
    expect(await rejection(appexec.secrets.set("1bad", "x"))).toMatchObject({ code: "invalid_request" })
  })

  it("the host's logger gets appexec's lines as a message and flat fields, node lines included", async () => {
    // Request lines are at debug (a 5xx or a slow request at info): asked for here.
    const { appexec, logger } = await memoryInstance({ logLevel: "debug" })
    const app = await appexec.apps.import(echo)
    const key = await appexec.keys.create()
    await appexec.executions.run(app.appId, { text: "x" })
    const repeated = logger.lines.find((line) => line.message === "repeated 3 times")
    expect(repeated?.level).toBe("info")
    expect(repeated?.fields).toMatchObject({ executionId: expect.any(String) })
    await appexec.fetch(new Request("http://host/v1/apps", { headers: { "x-api-key": key.key } }))
    await appexec.close()
    const request = logger.lines.find((line) => line.message.startsWith("GET /v1/apps 200"))
    expect(request?.level).toBe("debug")
    expect(request?.fields).toMatchObject({ method: "GET", route: "/v1/apps", status: 200 })
  })

  it("a pino logger (fields first) gets the fields first", async () => {
    const calls: Array<ReadonlyArray<unknown>> = []
    const at = (...args: ReadonlyArray<unknown>) => void calls.push(args)
    const pinoLike = { debug: at, info: at, warn: at, error: at, levels: { values: {} }, bindings: () => ({}) }
    const { appexec } = await memoryInstance({ logger: pinoLike })
    const app = await appexec.apps.import(echo)
    await appexec.executions.run(app.appId, { text: "x" })
    expect(calls).toContainEqual([expect.objectContaining({ executionId: expect.any(String) }), "repeated 3 times"])
  })

  it("a setting that cannot work rejects once with a ConfigurationError naming it, logged nowhere", async () => {
    const logger = recorder()
    const refused = await rejection(createAppexec({ storage: { memory: true }, logger, config: { lease: "0 millis" } }))
    expect(refused).toBeInstanceOf(ConfigurationError)
    expect(refused).toMatchObject({ code: "invalid_configuration", setting: "lease" })
    expect(logger.lines.filter((line) => line.level !== "debug")).toEqual([])
    const badKey = await rejection(createAppexec({ storage: { memory: true }, logger, masterKey: "short" }))
    expect(badKey).toMatchObject({ code: "invalid_configuration", setting: "masterKey" })
    const badUrl = await rejection(createAppexec({ storage: { postgres: "mysql://x" }, logger }))
    expect(badUrl).toMatchObject({ code: "invalid_configuration", setting: "storage" })
  })

  it("close(): later calls reject with code closed and requests are answered 503; close is idempotent", async () => {
    const { appexec } = await memoryInstance()
    const app = await appexec.apps.import(greeting)
    const closing = appexec.close()
    expect(appexec.close()).toBe(closing)
    await closing
    const refused = await rejection(appexec.executions.start(app.appId, { who: "Ada" }))
    expect(refused).toBeInstanceOf(AppexecError)
    expect(refused).toMatchObject({ code: "closed" })
    expect((await appexec.fetch(new Request("http://host/v1/apps"))).status).toBe(503)
  })
})
