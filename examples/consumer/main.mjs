// @ts-check
/**
 * An API consumer of appexec in plain JavaScript (docs/api.md#overview): find an app, read its parameters,
 * start an execution with inputs keyed by parameter name, wait until it ends, and read its
 * outputs by label without assuming they are images. It runs under plain `node`; the JSDoc types
 * let TypeScript check it.
 *
 * Run it against a running service (`npx appexec serve` prints a key):
 *
 *     APPEXEC_BASE_URL=http://127.0.0.1:8080 APPEXEC_API_KEY=aex_… node examples/consumer/main.mjs Greeting who=Ada tone=formal
 *
 * With no arguments, or without a key, it prints its usage; an error of the API (an unknown app,
 * wrong inputs, a wrong key) is printed as one line, without a stack.
 */
import { createClient, Outputs } from "@appexec/client"
import { pathToFileURL } from "node:url"

/**
 * What to run, and where.
 * @typedef {object} ConsumeOptions
 * @property {string} baseUrl Where the service answers, without `/v1`.
 * @property {string} apiKey A workspace API key.
 * @property {string} appName The app's name as the list shows it.
 * @property {Readonly<Record<string, string>>} inputs Inputs keyed by parameter name.
 * @property {number} [intervalMs] Polling interval in milliseconds, on a server without the event stream (default: the client's 3–5 s).
 * @property {(line: string) => void} [log] Where progress goes (default: stderr).
 */

/**
 * Runs the app once and returns one line per output.
 * @param {ConsumeOptions} options
 * @returns {Promise<ReadonlyArray<string>>}
 */
export const consume = async (options) => {
  const log = options.log ?? ((line) => console.error(line))
  const appexec = createClient({ baseUrl: options.baseUrl, apiKey: options.apiKey })

  // 1. List apps; 2. inspect the one we want: its parameters are the source of truth for `inputs`.
  const app = (await appexec.apps.list({ search: options.appName })).find((a) => a.name === options.appName)
  if (app === undefined) throw new Error(`No app named ${options.appName}.`)
  const detail = await appexec.apps.get(app.appId)
  log(`${detail.name}: ${detail.parameters.map((p) => `${p.name}${p.required ? "*" : ""} (${p.type})`).join(", ")}`)

  // 3. Start (sent once: never again because outputs are not ready); 4. wait until completed or failed: on the
  // execution's event stream, or, on a server without one, polling every 3–5 s.
  // (`appexec.run(options.appName, inputs)` does 1–4 in one call and checks the inputs against the detail first.)
  const started = await appexec.executions.start(app.appId, options.inputs)
  log(`started ${started.executionId}: ${started.status}`)
  const done = await appexec.executions.wait(started.executionId, {
    onStatus: (execution) => log(`status: ${execution.status}`),
    ...(options.intervalMs === undefined ? {} : { interval: options.intervalMs })
  })
  if (done.status === "failed") log(`failed: ${done.errorMessage ?? "see the outputs"}`)
  return Outputs.all(done).map(Outputs.describe)
}

/** What the program prints when it is run without what it needs. */
export const usage = [
  "usage: node examples/consumer/main.mjs APP [name=value …]",
  "  Runs the app APP (its name, as GET /v1/apps lists it) with the inputs given and prints its outputs.",
  "  APPEXEC_API_KEY  a workspace API key (the one `appexec serve` printed); required",
  "  APPEXEC_BASE_URL where the service answers (default http://127.0.0.1:8080)",
  "example: APPEXEC_API_KEY=aex_… node examples/consumer/main.mjs Greeting who=Ada tone=formal"
].join("\n")

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [appName, ...pairs] = process.argv.slice(2)
  const apiKey = process.env["APPEXEC_API_KEY"] ?? ""
  if (appName === undefined || appName === "" || apiKey === "") {
    console.error(appName === undefined || appName === "" ? usage : `APPEXEC_API_KEY is not set.\n${usage}`)
    process.exit(2)
  }
  const badPair = pairs.find((p) => p.indexOf("=") <= 0)
  if (badPair !== undefined) {
    console.error(`'${badPair}' is not name=value.\n${usage}`)
    process.exit(2)
  }
  const inputs = Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]))
  try {
    const lines = await consume({
      baseUrl: process.env["APPEXEC_BASE_URL"] ?? "http://127.0.0.1:8080",
      apiKey,
      appName,
      inputs
    })
    for (const line of lines) console.log(line)
  } catch (error) {
    // The client's errors say what went wrong in their message; an `ApiError` prints with its status and code.
    const said = error instanceof Error ? ("status" in error ? String(error) : error.message) : String(error)
    console.error(`consumer: ${said}`)
    process.exit(1)
  }
}
