import { Ids } from "@appexec/api"
import { Appexec, ExecutionStore } from "@appexec/core"
import { NodeListener } from "@appexec/platform-node"
import { TestHarness, TestReceiver } from "@appexec/testing"
import { Command } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Cause, ConfigProvider, type Console, Effect, Exit, Fiber, Option, TestClock } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as RunCommand from "../src/commands/RunCommand.js"
import * as AppNames from "../src/internal/AppNames.js"

const parseApp = {
  name: "Parse",
  description: "Echoes its input as JSON",
  public: true,
  nodes: [
    { id: "text", type: "input.text", label: "Text", config: { name: "text", required: true } },
    { id: "parsed", type: "output.json", label: "Parsed" }
  ],
  edges: [{ source: "text", target: "parsed" }]
}

/** The instance served on 127.0.0.1 with the Parse app and a key. */
const served = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const app = yield* appexec.apps.import(parseApp, { owner: { public: true } })
  const { key } = yield* TestHarness.signIn("cli", "cli")
  const { url } = yield* NodeListener.serve({ logRequests: false })
  return { baseUrl: url, key, appId: app.appId }
}).pipe(Effect.orDie)

/** Pauses ten seconds, then echoes its text. */
const slowApp = {
  name: "Slow echo",
  public: true,
  nodes: [
    { id: "text", type: "input.text", label: "Text", config: { name: "text", required: true } },
    { id: "pause", type: "util.delay", label: "Pause", config: { ms: 10_000 } },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [
    { source: "text", target: "pause" },
    { source: "pause", target: "out" }
  ]
}

/**
 * Until `done` holds, yielding to the event loop between looks (a latch on what the test can
 * read: no sleep, no virtual time); dies with `what` when it never does.
 */
const eventually = (what: string, done: Effect.Effect<boolean>) =>
  Effect.gen(function*() {
    for (let turn = 0; turn < 100_000; turn++) {
      if (yield* done) return
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage(what)
  })

/**
 * Runs `appexec run …args`, polling without pause, and returns its exit and what it printed
 * (its stderr lines into `err` as they come, when given).
 */
const runCli = (args: ReadonlyArray<string>, err: Array<string> = []) =>
  Effect.gen(function*() {
    const out: Array<string> = []
    const console = yield* Effect.console
    const captured: Console.Console = {
      ...console,
      log: (...line) => Effect.sync(() => void out.push(line.join(" "))),
      error: (...line) => Effect.sync(() => void err.push(line.join(" ")))
    }
    const cli = Command.run(
      Command.make("appexec").pipe(Command.withSubcommands([RunCommand.make({ interval: 0, live: false })])),
      {
        name: "appexec",
        version: "test"
      }
    )
    const exit = yield* Effect.exit(Effect.withConsole(cli(["node", "appexec", "run", ...args]), captured))
    return { exit, out, err }
  }).pipe(Effect.provide(NodeContext.layer))

describe("appexec run", () => {
  it.scoped("runs an app by name, shows its statuses and prints its outputs", () =>
    Effect.gen(function*() {
      const { baseUrl, key } = yield* served
      const { exit, out, err } = yield* runCli([
        "Parse",
        "--input",
        "text={\"a\":\"b=c\"}",
        "--base-url",
        baseUrl,
        "--key",
        key
      ])
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(out).toEqual(["Parsed (json): {\"a\":\"b=c\"}"])
      const [, executionId] = /^completed in 0s \(execution ([0-9a-f-]{36})\)$/.exec(err.at(-1)!)!
      // The id is said as soon as the execution is started, before its first status.
      expect(err[0]).toBe(`execution ${executionId} started`)
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("shows running as soon as the execution runs, not when it ends", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const { baseUrl, key } = yield* served
      const slow = yield* appexec.apps.import(slowApp, { owner: { public: true } })
      const err: Array<string> = []
      const cli = yield* Effect.fork(
        runCli([slow.appId, "-i", "text=x", "--base-url", baseUrl, "--key", key], err)
      )
      // No virtual time passes: the worker starts it at once, and the held read answers that change.
      yield* eventually("appexec run never showed running", Effect.sync(() => err.includes("running · 0s")))
      yield* TestClock.adjust("10 seconds")
      const { exit, out } = yield* Fiber.join(cli)
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(out).toEqual(["Out (text): x"])
      expect(err.at(-1)).toMatch(/^completed in 10s \(execution [0-9a-f-]{36}\)$/)
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("in a pipe, prints the progress of its nodes as plain lines from the event stream", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const { baseUrl, key } = yield* served
      const slow = yield* appexec.apps.import(slowApp, { owner: { public: true } })
      const err: Array<string> = []
      const cli = yield* Effect.fork(runCli([slow.appId, "-i", "text=x", "--base-url", baseUrl, "--key", key], err))
      yield* eventually("appexec run never showed running", Effect.sync(() => err.includes("running · 0s")))
      for (let second = 0; second < 10; second++) {
        yield* TestClock.adjust("1 second")
        for (let turn = 0; turn < 100; turn++) yield* Effect.yieldNow()
      }
      const { exit, out } = yield* Fiber.join(cli)
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(out).toEqual(["Out (text): x"])
      const progress = err.filter((line) => line.startsWith("[pause] "))
      expect(progress.length).toBeGreaterThan(1)
      for (const line of progress) expect(line).toMatch(/^\[pause\] \d{1,3}% \d+ s of 10 s$/)
      expect(progress.at(-1)).toBe("[pause] 100% 10 s of 10 s")
      expect(err.join("\n")).not.toContain("\x1b")
      expect(err.at(-1)).toMatch(/^completed in 10s \(execution [0-9a-f-]{36}\)$/)
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("exits non-zero with the execution's error message when it fails", () =>
    Effect.gen(function*() {
      const { baseUrl, key, appId } = yield* served
      const { exit, out } = yield* runCli([appId, "-i", "text=not json", "--base-url", baseUrl, "--key", key])
      const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      expect(Option.getOrThrow(error)).toMatchObject({
        _tag: "RunFailed",
        message: expect.stringMatching(/not valid JSON/)
      })
      expect(out).toEqual([expect.stringMatching(/^Parsed: failed: .*the upstream text is not valid JSON$/)])
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("lists the app's parameters when the inputs are wrong, and sends nothing", () =>
    Effect.gen(function*() {
      const { baseUrl, key, appId } = yield* served
      const { exit, err } = yield* runCli([appId, "--input", "txt=x", "--base-url", baseUrl, "--key", key])
      const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      // One error, which the command's entry prints once: the message, then what the app takes.
      expect(Option.getOrThrow(error)).toMatchObject({
        _tag: "RunUsageError",
        message: expect.stringMatching(
          /'txt' is not a parameter of this app[^]*\nParse takes:\n {2}--input text=… {2}text \(required\)$/
        )
      })
      expect(err.join("\n")).not.toContain("'txt' is not a parameter")
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("answers an unknown app name with the closest names and appexec apps list", () =>
    Effect.gen(function*() {
      const { baseUrl, key } = yield* served
      const { exit, out } = yield* runCli(["Pars", "--input", "text=x", "--base-url", baseUrl, "--key", key])
      const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      expect(Option.getOrThrow(error)).toMatchObject({
        _tag: "RunUsageError",
        message: "No app is named 'Pars'. Did you mean \"Parse\"? `appexec apps list` lists every app of the " +
          "instance (run where serve runs)."
      })
      expect(out).toEqual([])
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("answers inputs given without --input with the command line they belong in", () =>
    Effect.gen(function*() {
      const { baseUrl, key } = yield* served
      const { exit } = yield* runCli(["Parse", "text=a b", "--base-url", baseUrl, "--key", key])
      const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      expect(Option.getOrThrow(error)).toMatchObject({
        _tag: "RunUsageError",
        message: "Inputs go after --input (or -i): appexec run Parse --input 'text=a b'"
      })
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("says at once that no server answers at a refused address, without waiting to retry", () =>
    Effect.gen(function*() {
      // A port that was just free: nothing listens on it. No virtual time passes, so a retry's wait would never end.
      const closed = yield* Effect.async<number>((resume) => {
        const probe = createServer()
        probe.listen(0, "127.0.0.1", () => {
          const { port } = probe.address() as AddressInfo
          probe.close(() => resume(Effect.succeed(port)))
        })
      })
      const baseUrl = `http://127.0.0.1:${closed}`
      const { exit } = yield* runCli([
        "Parse",
        "--input",
        "text=x",
        "--base-url",
        baseUrl,
        "--key",
        `aex_${"A".repeat(43)}`
      ])
      const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      expect(Option.getOrThrow(error)).toMatchObject({
        _tag: "RunUsageError",
        message: `No appexec server answers at ${baseUrl}; is \`appexec serve\` running? (Another address: ` +
          "APPEXEC_BASE_URL or --base-url.)"
      })
    }))

  it.effect("suggests the names closest to an unknown one, in any case, by edits or a shared start", () =>
    Effect.sync(() => {
      expect(AppNames.distance("postr", "poster")).toBe(1)
      expect(AppNames.distance("kitten", "sitting")).toBe(3)
      expect(AppNames.closest("Postr", ["Poster", "Caption", "Greeting", "Slow echo"])).toEqual(["Poster"])
      expect(AppNames.closest("ken", ["Ken Burns", "Caption"])).toEqual(["Ken Burns"])
      expect(AppNames.closest("THUMBNAIL", ["Thumbnail", "Thumbnails"])).toEqual(["Thumbnail", "Thumbnails"])
      expect(AppNames.closest("xyz", ["Poster", "Caption"])).toEqual([])
      expect(AppNames.unknownMessage("xyz", [])).toBe(
        "No app is named 'xyz'. This key can run no app yet. `appexec apps list` lists every app of the instance " +
          "(run where serve runs)."
      )
    }))

  it.scoped("without a key, says to set APPEXEC_API_KEY or pass --key", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* served
      const { exit } = yield* runCli(["Parse", "--input", "text=x", "--base-url", baseUrl]).pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))
      )
      const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      expect(Option.getOrThrow(error)).toMatchObject({ _tag: "RunUsageError", message: RunCommand.noKeyMessage })
      expect(RunCommand.noKeyMessage).toMatch(/APPEXEC_API_KEY.*--key/)
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("--webhook-events sends the events named to --webhook, each a message of its type", () =>
    Effect.gen(function*() {
      const { baseUrl, key } = yield* served
      const receiver = yield* TestReceiver.start(() => 204)
      const { exit } = yield* runCli([
        "Parse",
        "--input",
        "text=[1]",
        "--webhook",
        receiver.url(),
        "--webhook-events",
        "completed, start",
        "--base-url",
        baseUrl,
        "--key",
        key
      ])
      expect(Exit.isSuccess(exit)).toBe(true)
      const types = [yield* receiver.next, yield* receiver.next].map((r) =>
        JSON.parse(new TextDecoder().decode(r.rawBody)).type
      )
      expect(types.sort()).toEqual(["completed", "start"])
    }).pipe(Effect.provide(TestHarness.layer({ webhooks: true }))))

  it.scoped("--priority starts the execution at that priority; above the workspace's highest it is refused", () =>
    Effect.gen(function*() {
      const { baseUrl, key } = yield* served
      const store = yield* ExecutionStore.ExecutionStore
      const run = (priority: string) =>
        runCli(["Parse", "--input", "text=[1]", "--priority", priority, "--base-url", baseUrl, "--key", key])
      const { err, exit } = yield* run("4")
      expect(Exit.isSuccess(exit)).toBe(true)
      const [, executionId] = /^execution ([0-9a-f-]{36}) started$/.exec(err[0]!)!
      expect(Option.getOrThrow(yield* store.get(Ids.ExecutionId.make(executionId!))).priority).toBe(4)

      yield* (yield* Appexec.Appexec).workspaces.set("cli", { maxPriority: 2 })
      const refused = yield* run("3")
      const error = Exit.isFailure(refused.exit) ? Cause.failureOption(refused.exit.cause) : Option.none()
      expect(String(Option.getOrThrow(error))).toContain("`priority` 3 is above 2")
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("--webhook-events names only known events, and needs --webhook", () =>
    Effect.gen(function*() {
      const { baseUrl, key } = yield* served
      const usage = (args: ReadonlyArray<string>) =>
        Effect.map(
          runCli(["Parse", "--input", "text=x", ...args, "--base-url", baseUrl, "--key", key]),
          ({ exit }) => Exit.isFailure(exit) ? Option.getOrThrow(Cause.failureOption(exit.cause)) : undefined
        )
      expect(yield* usage(["--webhook", "http://127.0.0.1:9/", "--webhook-events", "start,finish"])).toMatchObject({
        _tag: "RunUsageError",
        message: "--webhook-events: 'finish' is not an event; the events are start, output, logs, completed."
      })
      expect(yield* usage(["--webhook-events", "start"])).toMatchObject({
        _tag: "RunUsageError",
        message: "--webhook-events needs --webhook URL to send the events to."
      })
    }).pipe(Effect.provide(TestHarness.layer())))

  it.effect("reads name=value pairs up to the first '='", () =>
    Effect.gen(function*() {
      expect(yield* RunCommand.parseInputs(["u=https://x.example/?a=1&b=2", "t="])).toEqual({
        u: "https://x.example/?a=1&b=2",
        t: ""
      })
      const error = yield* Effect.flip(RunCommand.parseInputs(["novalue"]))
      expect(error.message).toContain("not name=value")
      expect(RunCommand.formatElapsed(187_500)).toBe("3m07s")
    }))
})
