// @ts-check
/**
 * appexec in a Fastify app: its API mounted under `/appexec` in a scope of its own (where
 * request bodies are left to appexec) beside the app's routes and Fastify's JSON parser, a route
 * of the app's own that runs an appexec app for a team (as that team's workspace, in-process, no
 * API key), appexec's log lines in Fastify's logger (pino), and a clean stop on SIGTERM. Data in
 * `.appexec/` of the working directory.
 *
 *     node examples/fastify/main.mjs      # then follow the printed curl lines
 */
import { AppexecError, createAppexec } from "@appexec/embed"
import Fastify from "fastify"

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
 * Starts the host on `port` (0: any free port) on 127.0.0.1.
 * @param {number} [port]
 */
export const startHost = async (port = 0) => {
  const fastify = Fastify({ logger: true }) // pino: JSON lines on stdout
  const appexec = await createAppexec({ basePath: "/appexec", logger: fastify.log })
  const { appId } = await appexec.apps.import(greeting, { public: true })

  await fastify.register(async (scope) => {
    scope.removeAllContentTypeParsers() // in this scope only: bodies go to appexec as sent
    scope.addContentTypeParser("*", (_request, _body, done) => done(null))
    scope.all("/appexec/*", (request, reply) => {
      reply.hijack()
      appexec.handler(request.raw, reply.raw) // appexec's API: /appexec/v1/apps, …
    })
  })
  fastify.post("/teams/:team/greetings", async (request, reply) => {
    const { team } = /** @type {{ team: string }} */ (request.params)
    const body = /** @type {{ who?: string, tone?: string } | undefined} */ (request.body)
    try {
      const done = await appexec.as({ workspace: team }).executions.run(appId, {
        who: body?.who,
        tone: body?.tone ?? "warm"
      })
      return { greeting: done.outputs[0]?.value }
    } catch (error) {
      if (!(error instanceof AppexecError) || error.code !== "invalid_inputs") throw error
      return reply.code(400).send({ error: error.message, details: error.details })
    }
  })
  fastify.get("/", async () => "The host's own page.\n")
  fastify.addHook("onClose", () => appexec.close()) // waits for running executions (up to 10 s)

  const url = await fastify.listen({ port, host: "127.0.0.1" })
  return { url, appexec, close: () => fastify.close() }
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
