// @ts-check
/**
 * appexec in an Express app: its API mounted under `/appexec` beside the app's own routes and
 * its global `express.json()`, a route of the app's own that runs an appexec app for a team
 * (as that team's workspace, in-process, no API key), appexec's log lines in the app's logger,
 * and a clean stop on SIGTERM. Data in `.appexec/` of the working directory.
 *
 *     node examples/express/main.mjs      # then follow the printed curl lines
 */
import { AppexecError, createAppexec } from "@appexec/embed"
import express from "express"
import { once } from "node:events"

/** The app the host runs: a greeting in the chosen tone. */
const greeting = {
  name: "Greeting",
  description: "Greets someone in the chosen tone",
  nodes: [
    { id: "who", type: "input.text", label: "Who", config: { name: "who", required: true } },
    { id: "tone", type: "input.options", label: "Tone", config: { name: "tone", options: ["warm", "formal"] } },
    {
      id: "compose",
      type: "text.template",
      label: "Compose",
      config: { template: "Hello {{who}}, in a {{tone}} tone." }
    },
    { id: "greeting", type: "output.text", label: "Greeting" }
  ],
  edges: [
    { source: "who", target: "compose" },
    { source: "tone", target: "compose" },
    { source: "compose", target: "greeting" }
  ]
}

/**
 * The host's logger, console-like: one JSON line per appexec line, on stdout.
 * @param {string} level
 */
const line = (level) => (/** @type {string} */ message, /** @type {object} */ fields = {}) =>
  console.log(JSON.stringify({ level, from: "appexec", message, ...fields }))
const logger = { debug: line("debug"), info: line("info"), warn: line("warn"), error: line("error") }

/**
 * Starts the host on `port` (0: any free port) on 127.0.0.1.
 * @param {number} [port]
 */
export const startHost = async (port = 0) => {
  const appexec = await createAppexec({ basePath: "/appexec", logger })
  const { appId } = await appexec.apps.import(greeting, { public: true })

  const app = express()
  app.use(express.json()) // the host's body parser, for every route
  app.use("/appexec", appexec.handler) // appexec's API: /appexec/v1/apps, …
  app.post("/teams/:team/greetings", async (req, res, next) => {
    try {
      const team = appexec.as({ workspace: req.params.team })
      const done = await team.executions.run(appId, { who: req.body?.who, tone: req.body?.tone ?? "warm" })
      res.json({ greeting: done.outputs[0]?.value })
    } catch (error) {
      if (!(error instanceof AppexecError) || error.code !== "invalid_inputs") return next(error)
      res.status(400).json({ error: error.message, details: error.details })
    }
  })
  app.get("/", (_req, res) => void res.type("text").send("The host's own page.\n"))

  const server = app.listen(port, "127.0.0.1")
  await once(server, "listening")
  const address = server.address()
  const url = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : port}`
  return {
    url,
    appexec,
    close: async () => {
      server.close()
      await appexec.close() // waits for running executions (up to 10 s), then resolves
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const host = await startHost(Number(process.env.PORT ?? 3000))
  console.log(`host listening on ${host.url}`)
  // A key for the API's clients, made once: later starts find it (keys are never shown again).
  if ((await host.appexec.keys.list({ workspace: "demo" })).length === 0) {
    const { key } = await host.appexec.keys.create({ workspace: "demo" })
    console.log(`API key of workspace "demo" (shown once): ${key}`)
    console.log(`curl -H 'x-api-key: ${key}' ${host.url}/appexec/v1/apps`)
  }
  console.log(`curl -X POST -H 'content-type: application/json' -d '{"who":"Ada"}' ${host.url}/teams/acme/greetings`)
  process.once("SIGTERM", async () => {
    await host.close()
    console.log("host stopped")
    process.exit(0)
  })
}
