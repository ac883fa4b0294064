/**
 * The Express and Fastify examples in a project that installed the embedding tarballs and the
 * framework: each `<name>/main.mjs` (copied there by `scripts/pack-test.mjs`) is started on a
 * free port; its own route runs the app as a team's workspace, the API answers under `/appexec`
 * (a start whose body the framework's parser may read first, and a poll), and SIGTERM stops it
 * with exit code 0. Run under plain `node`; exits 1 with the example's output when a check fails.
 */
import { spawn } from "node:child_process"

/** Starts the example in `dir`; resolves with its URL, key and output once it printed them. */
const start = (dir) =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["main.mjs"], { cwd: dir, env: { ...process.env, PORT: "0" } })
    let output = ""
    const exited = new Promise((done) => child.on("close", (code) => done(code)))
    const timer = setTimeout(() => reject(new Error(`${dir}: not serving within 30 s\n${output}`)), 30_000)
    child.stderr.on("data", (chunk) => (output += chunk))
    child.stdout.on("data", (chunk) => {
      output += chunk
      const url = /host listening on (\S+)/.exec(output)?.[1]
      const key = /\(shown once\): (\S+)/.exec(output)?.[1]
      if (url && key && output.includes("/teams/acme/greetings")) {
        clearTimeout(timer)
        resolve({ child, url, key, exited, output: () => output })
      }
    })
    exited.then((code) => reject(new Error(`${dir}: exited (${code}) before it served\n${output}`)))
  })

const expect = (what, actual, wanted, host) => {
  if (JSON.stringify(actual) !== JSON.stringify(wanted)) {
    throw new Error(
      `${what}: ${JSON.stringify(actual)}, not ${JSON.stringify(wanted)}\n--- output ---\n${host.output()}`
    )
  }
}

for (const name of ["express", "fastify"]) {
  const host = await start(name)
  try {
    const json = { "content-type": "application/json" }
    const greeted = await fetch(`${host.url}/teams/acme/greetings`, {
      method: "POST",
      headers: json,
      body: JSON.stringify({ who: "Ada" })
    }).then((r) => r.json())
    expect(`${name}: the host's route`, greeted, { greeting: "Hello Ada, in a warm tone." }, host)
    const headers = { ...json, "x-api-key": host.key }
    const apps = await fetch(`${host.url}/appexec/v1/apps`, { headers }).then((r) => r.json())
    const started = await fetch(`${host.url}/appexec/v1/apps/${apps.data[0].appId}/executions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ inputs: { who: "Grace", tone: "formal" } })
    })
    expect(`${name}: POST /appexec/v1/apps/{appId}/executions`, started.status, 202, host)
    const { executionId } = (await started.json()).data
    const done = await fetch(`${host.url}/appexec/v1/executions/${executionId}`, {
      headers: { ...headers, prefer: "wait=10" }
    }).then((r) => r.json())
    expect(`${name}: the execution's output`, done.data.outputs[0].value, "Hello Grace, in a formal tone.", host)
  } finally {
    host.child.kill("SIGTERM")
  }
  expect(`${name}: exit code after SIGTERM`, await host.exited, 0, host)
  console.log(`${name}: the host's route, the API under /appexec, SIGTERM: ok`)
}
