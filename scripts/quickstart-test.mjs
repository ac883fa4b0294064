#!/usr/bin/env node
/**
 * The README as a newcomer runs it, on a fresh clone (CI runs this after the tests).
 *
 * 1. `git clone` this repository's committed HEAD into a temp dir.
 * 2. Run the README's quick-start block verbatim (`npm install && npm start`) in the background and
 *    read the printed address and API key.
 * 3. `npx --no-install appexec --help` in the clone: the bin is linked by the install itself.
 * 4. The README's next block verbatim, with the printed key where it says `aex_…`: it prints an
 *    image URL, which must download as a PNG that sharp decodes.
 * 5. The offline round trip verbatim (after the same `export` line): the Poster draws a prompt,
 *    Read text reads it back; every word of the prompt must be in its text output.
 * 6. The curl flow verbatim (after the same `export` line): its last answer is the execution.
 * 7. The three terminals of "Webhooks in three terminals": the first server stopped, each of the
 *    block's three commands run as written; the receiver must print the verified webhook: the
 *    execution's status and its output.
 *
 * The README's shell blocks are read in order; a block tagged `sh fragment` is not run, and any
 * other `sh` block must be one of the steps above (a new one fails here until it has a step).
 * Every step fails loudly with the output of what failed; children and the temp dir are removed
 * on every exit.
 */
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const repo = fileURLToPath(new URL("..", import.meta.url))
const startedAt = Date.now()
const tmp = mkdtempSync(join(tmpdir(), "appexec-quickstart-"))
const clone = join(tmp, "appexec")

/** @type {Set<import("node:child_process").ChildProcess>} */
const children = new Set()
const cleanup = () => {
  for (const child of children) {
    try {
      process.kill(-child.pid, "SIGKILL")
    } catch {
      // already gone
    }
  }
  children.clear()
  rmSync(tmp, { recursive: true, force: true })
}
process.on("exit", cleanup)
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130))

/** The environment of a newcomer's shell: none of appexec's variables, whatever CI has set. */
const baseEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.startsWith("APPEXEC_") && name !== "PORT")
)

const fail = (message, output = "") => {
  console.error(`quickstart: FAILED: ${message}${output === "" ? "" : `\n--- output ---\n${output}`}`)
  process.exit(1)
}
const step = (name) => console.log(`quickstart: ${name} (${Math.round((Date.now() - startedAt) / 1000)} s)`)

/** The fenced shell blocks of a Markdown text, in order: their info string and their code. */
const shellBlocks = (markdown) =>
  [...markdown.matchAll(/^```(sh|bash|shell)([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    fragment: m[2].trim().split(/\s+/).includes("fragment"),
    code: m[3]
  }))

/** A background shell running `script` in its own process group; `waitFor` a pattern in its output. */
const background = (name, script, env) => {
  const child = spawn("bash", ["-c", script], { cwd: clone, env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
  children.add(child)
  let output = ""
  const waiters = new Set()
  const feed = (chunk) => {
    output += chunk
    for (const waiter of waiters) waiter()
  }
  child.stdout.setEncoding("utf8").on("data", feed)
  child.stderr.setEncoding("utf8").on("data", feed)
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })))
  return {
    get output() {
      return output
    },
    exited,
    waitFor: (pattern, timeoutMs) =>
      new Promise((resolve) => {
        const check = () => {
          const match = pattern.exec(output)
          if (match !== null) {
            waiters.delete(check)
            clearTimeout(timer)
            resolve(match)
          }
        }
        const timer = setTimeout(() => fail(`${name}: no ${pattern} within ${timeoutMs / 1000} s`, output), timeoutMs)
        waiters.add(check)
        exited.then(({ code, signal }) => {
          if (waiters.has(check)) fail(`${name} exited (${code ?? signal}) before printing ${pattern}`, output)
        })
        check()
      }),
    stop: async () => {
      process.kill(-child.pid, "SIGTERM")
      const { code, signal } = await exited
      children.delete(child)
      return { code, signal }
    }
  }
}

/** Runs `script` with bash -e to its end; fails the test unless it exits 0. */
const foreground = (name, script, env) => {
  const result = spawnSync("bash", ["-e", "-o", "pipefail", "-c", script], {
    cwd: clone,
    env,
    encoding: "utf8",
    timeout: 180_000
  })
  const output = `${result.stdout}${result.stderr}`
  if (result.status !== 0) fail(`${name} exited ${result.status ?? result.signal}`, `$ ${script}\n${output}`)
  return result.stdout
}

step(`cloning ${repo}`)
const cloned = spawnSync("git", ["clone", "--quiet", repo, clone], { encoding: "utf8" })
if (cloned.status !== 0) fail("git clone", cloned.stderr)

const blocks = shellBlocks(readFileSync(join(clone, "README.md"), "utf8")).filter((b) => !b.fragment)
const expected = ["quick start", "run Poster", "read it back", "curl flow", "webhooks in three terminals"]
if (blocks.length !== expected.length) {
  fail(
    `README.md has ${blocks.length} runnable sh blocks; this test runs ${expected.length} (${expected.join(", ")}). ` +
      "Tag a block `sh fragment` or give it a step here.",
    blocks.map((b) => b.code).join("\n---\n")
  )
}
const [quickStart, runPoster, readBack, curlFlow, webhooks] = blocks

// 2. The quick start, verbatim.
if (quickStart.code.trim() !== "npm install && npm start") fail("the quick-start block changed", quickStart.code)
step(`README quick start in ${clone}: ${quickStart.code.trim()}`)
const first = background("npm install && npm start", quickStart.code, baseEnv)
const [, key] = await first.waitFor(
  /API key of workspace "default" \(shown once, keep it\): (aex_[A-Za-z0-9_-]+)/,
  900_000
)
const [, url] = await first.waitFor(/appexec is listening on (http:\/\/\S+)/, 60_000)
step(`serving on ${url}, key ${key.slice(0, 10)}…`)

// 3. The bin is linked by the install.
const help = spawnSync("npx", ["--no-install", "appexec", "--help"], { cwd: clone, env: baseEnv, encoding: "utf8" })
if (help.status !== 0 || !help.stdout.includes("USAGE")) {
  fail("npx --no-install appexec --help", `${help.stdout}${help.stderr}`)
}

// 4. The README's next commands: the key where it says aex_…, the address where it says :8080.
const withOurs = (code) => code.replaceAll("aex_…", key).replaceAll("http://127.0.0.1:8080", url)
const exportLine = withOurs(runPoster.code).split("\n").find((line) => line.startsWith("export "))
if (exportLine === undefined) fail("the run Poster block sets no variables", runPoster.code)
step("README: npx appexec run Poster")
const printed = foreground("npx appexec run Poster", withOurs(runPoster.code), baseEnv)
const imageUrl = printed.match(/https?:\/\/\S+/)?.[0]
if (imageUrl === undefined) fail("run Poster printed no URL", printed)
const image = await fetch(imageUrl)
const bytes = Buffer.from(await image.arrayBuffer())
if (image.status !== 200 || !bytes.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]))) {
  fail(`the image URL answered ${image.status} ${image.headers.get("content-type")}, not a PNG`, imageUrl)
}
const sharp = createRequire(join(clone, "package.json"))("sharp")
const { width, height, format } = await sharp(bytes).metadata()
if (format !== "png" || !(width > 0 && height > 0)) fail(`the image decodes as ${format} ${width}x${height}`)
step(`the image is a ${width}x${height} PNG`)

// 5. The offline round trip, after the same export line: a real model reads the Poster's prompt back.
step("README: the Poster read back by Read text")
const prompt = /prompt="([^"]+)"/.exec(readBack.code)?.[1]
if (prompt === undefined) fail("the read-back block gives the Poster no prompt", readBack.code)
const read = foreground("the read-back block", `${exportLine}\n${withOurs(readBack.code)}`, baseEnv)
const text = read.match(/^Text \(text\): ([\s\S]*?)\n(?=Lines \(json\): )/m)?.[1]
if (text === undefined) fail("Read text printed no text output", read)
const wordsOf = (line) => line.toLowerCase().split(/[^a-z0-9]+/).filter((word) => word !== "")
const missing = wordsOf(prompt).filter((word) => !wordsOf(text).includes(word))
if (missing.length > 0) fail(`Read text did not read back ${missing.join(", ")} of "${prompt}"`, read)
step(`Read text read back "${text.replace(/\n/g, " / ")}"`)

// 6. The curl flow, after the same export line (it runs in the same terminal).
step("README: the curl flow")
const answers = foreground("the curl flow", `${exportLine}\n${withOurs(curlFlow.code)}`, baseEnv).trim()
// curl prints each answer without a newline: the last one starts at the last `{"data":`.
const polled = JSON.parse(answers.slice(answers.lastIndexOf("{\"data\":")))
if (!["queued", "running", "completed"].includes(polled?.data?.status) || !(polled.data.outputs?.length > 0)) {
  fail("the curl flow's last answer is not the execution", answers)
}

// 7. Webhooks in three terminals: each command of the block as written, the first server stopped.
step("README: webhooks in three terminals")
await first.stop()
const commands = webhooks.code.replace(/\\\n\s*/g, "").split("\n").map((line) => line.replace(/\s+# .*$/, "").trim())
  .filter((line) => line !== "")
if (commands.length !== 3) fail("the webhooks block is not three commands", webhooks.code)
const exported = exportLine.replace(/^export /, "").replace(/\s+#.*$/, "").trim().split(/\s+/)
const terminal = {
  ...baseEnv,
  ...Object.fromEntries(exported.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]))
}
const server = background("terminal 1", commands[0], baseEnv)
await server.waitFor(/appexec is listening on/, 300_000)
const receiver = background("terminal 2", commands[1], terminal)
await receiver.waitFor(/receiving appexec webhooks on/, 30_000)
const greeted = foreground("terminal 3", commands[2], terminal)
if (!greeted.includes("Hello Ada")) fail("terminal 3 did not print the greeting", greeted)
await receiver.waitFor(
  /verified completed webhook: execution [0-9a-f-]{36} completed\n {2}Greeting \(text\): Hello Ada, in a warm tone\./,
  60_000
)
await receiver.stop()
await server.stop()

console.log(
  `quickstart: the README ran as written on a fresh clone in ${Math.round((Date.now() - startedAt) / 1000)} s`
)
