/**
 * One test project per package and example. Tests run on the TypeScript sources: the
 * `@appexec/source` export condition resolves every `@appexec/*` import to `src/` (published
 * consumers, who do not set it, get `dist/`). Processes that tests spawn run the built packages.
 */
import { readdirSync } from "node:fs"
import { defineWorkspace } from "vitest/config"

const conditions = ["@appexec/source"]

const projects = ["packages", "examples"].flatMap((group) =>
  readdirSync(new URL(`./${group}`, import.meta.url), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `${group}/${entry.name}`)
)

export default defineWorkspace(
  projects.map((root) => ({
    resolve: { conditions },
    ssr: { resolve: { conditions, externalConditions: conditions } },
    // Tests that spawn processes, bundle or bind sockets take seconds on a busy two-core machine;
    // virtual-time tests finish in milliseconds whatever the bound.
    test: { name: root.split("/")[1]!, root, testTimeout: 20_000 }
  }))
)
