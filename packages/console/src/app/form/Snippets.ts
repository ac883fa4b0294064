/**
 * The request the app page's form makes, as a person would write it: a curl command and a
 * program on `@appexec/client`. The key is never written in them: they read `APPEXEC_API_KEY`
 * from the environment.
 */

/** What a start request holds. */
export interface StartRequest {
  /** Where the API answers: the page's origin and base path, without `/v1`. */
  readonly baseUrl: string
  readonly appId: string
  readonly inputs: Readonly<Record<string, string>>
  readonly webhook?: string | undefined
  /** The webhook's events, when not the default. */
  readonly webhookEvents?: ReadonlyArray<string> | undefined
  /** The priority, when not the default. */
  readonly priority?: number | undefined
}

/** The start request's body. */
const bodyOf = (request: StartRequest) => ({
  inputs: request.inputs,
  ...(request.webhookEvents === undefined ? {} : { webhookEvents: request.webhookEvents }),
  ...(request.priority === undefined ? {} : { priority: request.priority })
})

/** A word for a POSIX shell, in single quotes. */
const shellQuote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`

/** The start request as a curl command. */
export const curl = (request: StartRequest): string => {
  const query = request.webhook === undefined || request.webhook === ""
    ? ""
    : `?webhook=${encodeURIComponent(request.webhook)}`
  const url = `${request.baseUrl}/v1/apps/${encodeURIComponent(request.appId)}/executions${query}`
  return [
    "curl -X POST -H \"x-api-key: $APPEXEC_API_KEY\" -H 'content-type: application/json' \\",
    `  -d ${shellQuote(JSON.stringify(bodyOf(request)))} \\`,
    `  ${shellQuote(url)}`
  ].join("\n")
}

/** The start request as a TypeScript program on `@appexec/client` that waits for the outputs. */
export const clientCode = (request: StartRequest): string => {
  const inputs = JSON.stringify(request.inputs, null, 2)
  const hook = request.webhook === undefined || request.webhook === ""
    ? []
    : [
      `webhook: ${JSON.stringify(request.webhook)}`,
      ...(request.webhookEvents === undefined ? [] : [`webhookEvents: ${JSON.stringify(request.webhookEvents)}`])
    ]
  const named = [...hook, ...(request.priority === undefined ? [] : [`priority: ${request.priority}`])]
  const options = named.length === 0 ? "" : `, { ${named.join(", ")} }`
  return [
    "import { createClient, Outputs } from \"@appexec/client\"",
    "",
    `const appexec = createClient({ baseUrl: ${
      JSON.stringify(request.baseUrl)
    }, apiKey: process.env.APPEXEC_API_KEY! })`,
    "",
    `const started = await appexec.executions.start(${JSON.stringify(request.appId)}, ${inputs}${options})`,
    "const done = await appexec.executions.wait(started.executionId)",
    "for (const output of Outputs.all(done)) console.log(Outputs.describe(output))",
    ""
  ].join("\n")
}
