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

export default async function setup(project: TestProject) {
  const server = await EmbeddedServer.start(EmbeddedServer.testSettings)
  project.provide("postgresUrl", server.url)
  return () => server.stop()
}
