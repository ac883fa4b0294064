/**
 * The compiled `appexec serve` as a child process for the browser tests: a temp data directory,
 * port 0, the printed key, private networks allowed (the test's own receivers are on 127.0.0.1),
 * and an apps directory holding copies of the example apps beside the apps these tests need:
 *
 * - **Slow wait**: waits 30 s, long enough to cancel it;
 * - **Lookup**: `GET <origin>/lookup/{{code}}` on the test's origin, which answers 500 for the
 *   code `broken` and `{ "answer": "found <code>" }` for any other, so a run fails or completes
 *   by its input alone;
 * - **Markup echo**: shows its `text` input back, under a description that holds markup too;
 *
 * and any apps a test file adds, with any flags of `serve` it adds (`layerWith`).
 */
import { TestReceiver } from "@appexec/testing"
import { Context, Effect, Layer } from "effect"
import { copyFileSync, readdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { spawnAppexec, startServe, tempDataDir } from "../../../server/test/support/ServeProcess.js"
import { ConsoleAssets } from "../../src/index.js"

/** The example apps that `appexec serve` imports when no `--apps` is given. */
const EXAMPLE_APPS = fileURLToPath(new URL("../../../server/apps", import.meta.url))

/** The code that the Lookup app's origin refuses with a 500. */
export const BROKEN_CODE = "broken"

/** The served console. */
export class ServedConsole extends Context.Tag("@appexec/console/test/ServedConsole")<ServedConsole, {
  /** Where the server answers, such as `http://127.0.0.1:41234`; the console is at `/console`. */
  readonly baseUrl: string
  /** The key of the `default` workspace, as the first start printed it. */
  readonly key: string
  /** Runs `appexec …args --data <the server's data directory>` to its end: its stdout, or a failure. */
  readonly cli: (...args: ReadonlyArray<string>) => Effect.Effect<string, Error>
}>() {}

/** The apps these tests need, with the Lookup app calling `origin`. */
const testApps = (origin: string) => ({
  "slow-wait.json": {
    name: "Slow wait",
    description: "Waits 30 seconds, then gives its message back: long enough to cancel it.",
    nodes: [
      { id: "message", type: "input.text", label: "Message", config: { name: "message", required: true } },
      { id: "wait", type: "util.delay", label: "Wait 30 s", config: { ms: 30_000 } },
      { id: "reply", type: "output.text", label: "Reply" }
    ],
    edges: [{ source: "message", target: "wait" }, { source: "wait", target: "reply" }]
  },
  "lookup.json": {
    name: "Lookup",
    description: `Looks a code up at the test's origin, which answers 500 for '${BROKEN_CODE}'.`,
    nodes: [
      { id: "code", type: "input.text", label: "Code", config: { name: "code", required: true } },
      {
        id: "call",
        type: "http.request",
        label: "Look up",
        config: { method: "GET", url: `${origin}/lookup/{{code}}`, pick: "/answer", output: "text" }
      },
      { id: "answer", type: "output.text", label: "Answer" }
    ],
    edges: [{ source: "code", target: "call" }, { source: "call", target: "answer" }]
  },
  "markup-echo.json": {
    name: "Markup echo",
    description: `Shows its text back. <img src=y onerror="window.__xss=2"> stays text here too.`,
    nodes: [
      { id: "text", type: "input.text", label: "Text", config: { name: "text", required: true } },
      { id: "same", type: "text.template", label: "Same text", config: { template: "{{text}}" } },
      { id: "echo", type: "output.text", label: "Echo" }
    ],
    edges: [{ source: "text", target: "same" }, { source: "same", target: "echo" }]
  }
})

/** The Lookup app's origin: 500 for the broken code, else the code found, as JSON. */
const lookupOrigin: TestReceiver.Policy = (request) => {
  const code = decodeURIComponent(request.url.split("/").pop() ?? "")
  if (code === BROKEN_CODE) return 500
  return (response) => {
    response.writeHead(200, { "content-type": "application/json" })
    response.end(JSON.stringify({ answer: `found ${code}` }))
  }
}

/** App definitions by file name, as JSON values. */
export type Definitions = Readonly<Record<string, unknown>>

const make = (extra: Definitions, args: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const origin = yield* TestReceiver.start(lookupOrigin)
    const appsDir = yield* tempDataDir
    for (const file of readdirSync(EXAMPLE_APPS).filter((name) => name.endsWith(".json"))) {
      copyFileSync(join(EXAMPLE_APPS, file), join(appsDir, file))
    }
    for (const [file, definition] of Object.entries({ ...testApps(origin.url("")), ...extra })) {
      writeFileSync(join(appsDir, file), JSON.stringify(definition, null, 2))
    }
    const dataDir = yield* tempDataDir
    // The console makes several calls a view; the default limit (100 a minute per IP) is for the internet.
    const serve = yield* startServe(dataDir, [
      "--apps",
      appsDir,
      "--allow-private-networks",
      "--rate-limit",
      "100000",
      ...args
    ])
    const cli = (...args: ReadonlyArray<string>) =>
      Effect.scoped(Effect.gen(function*() {
        const command = yield* spawnAppexec([...args, "--data", dataDir])
        const { code, signal } = yield* command.exited("30 seconds")
        if (code !== 0) {
          return yield* Effect.fail(
            new Error(`appexec ${args.join(" ")} ended with ${code ?? signal}:\n${command.output.stderr}`)
          )
        }
        return command.output.stdout
      }))
    // The page comes from the compiled command; the tests mean the console as its sources make it now.
    const page = yield* Effect.promise(() => fetch(`${serve.baseUrl}/console`).then((answer) => answer.text()))
    if (page !== ConsoleAssets.page("")) {
      return yield* Effect.fail(
        new Error(
          "appexec serve (packages/server/dist) serves another console than its sources make now: " +
            "run `npm run build` before these tests (npm test does)"
        )
      )
    }
    return { baseUrl: serve.baseUrl, key: serve.key, cli }
  })

/** The server and its apps for the layer's lifetime; everything is stopped and removed with it. */
export const layer: Layer.Layer<ServedConsole, Error> = Layer.scoped(ServedConsole, make({}))

/** As `layer`, with the apps of `extra` imported too, and `serve` given the flags `args` besides its own. */
export const layerWith = (extra: Definitions, args: ReadonlyArray<string> = []): Layer.Layer<ServedConsole, Error> =>
  Layer.scoped(ServedConsole, make(extra, args))
