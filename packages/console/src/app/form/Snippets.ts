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
}

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
    `  -d ${
      shellQuote(
        JSON.stringify(
          request.webhookEvents === undefined
            ? { inputs: request.inputs }
            : { inputs: request.inputs, webhookEvents: request.webhookEvents }
        )
      )
    } \\`,
    `  ${shellQuote(url)}`
  ].join("\n")
}

/** The start request as a TypeScript program on `@appexec/client` that waits for the outputs. */
export const clientCode = (request: StartRequest): string => {
  const inputs = JSON.stringify(request.inputs, null, 2)
  const options = request.webhook === undefined || request.webhook === ""
    ? ""
    : `, { webhook: ${JSON.stringify(request.webhook)}${
      request.webhookEvents === undefined ? "" : `, webhookEvents: ${JSON.stringify(request.webhookEvents)}`
    } }`
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
