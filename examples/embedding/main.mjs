// @ts-check
/**
 * A host program that embeds appexec with `createAppexec`: SQLite in `.appexec/appexec.db`, a
 * worker in this process. It imports an app, runs it (start, then wait in-process: no polling),
 * prints the outputs and closes the instance. This is the program of the README.
 *
 *     node examples/embedding/main.mjs Ada
 */
import { createAppexec } from "@appexec/embed"

const appexec = await createAppexec()
const app = await appexec.apps.import({
  name: "Greeting",
  nodes: [
    { id: "who", type: "input.text", label: "Who", config: { name: "who", required: true } },
    { id: "compose", type: "text.template", label: "Compose", config: { template: "Hello {{who}}!" } },
    { id: "greeting", type: "output.text", label: "Greeting" }
  ],
  edges: [{ source: "who", target: "compose" }, { source: "compose", target: "greeting" }]
})
const done = await appexec.executions.run(app.appId, { who: process.argv[2] ?? "Ada" })
console.log(`status: ${done.status}`)
for (const output of done.outputs) console.log(`${output.label} (${output.type}): ${output.value}`)
await appexec.close()
