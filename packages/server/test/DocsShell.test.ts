/**
 * The shell blocks of the documentation run as written. Every ```sh block of `docs/*.md` and of
 * the package READMEs is either run or tagged ```sh fragment (a synopsis, an install from a
 * registry the packages are not on yet, a production address). The runnable blocks of one page
 * run in order in one bash (one terminal, as a reader pastes them), with the two variables of the
 * README's quick start set to a served instance, `appexec` on the PATH, the example app
 * definitions in the working directory, and `curl` failing on any HTTP error. The README itself
 * runs on a fresh clone in CI (`scripts/quickstart-test.mjs`). The scaling page's deployment
 * command starts on PostgreSQL. The upgrading page's backup and restore run in `Backup.test.ts`.
 * The webhooks page's openssl check runs on a real delivery of `serve` (its raw body in
 * `body.json`, its headers in variables), and on an altered one.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { postgres } from "./support/Backends.js"
import { headerOf, realDelivery } from "./support/RealDelivery.js"
import { spawnAppexec, tempDataDir } from "./support/ServeProcess.js"

const root = fileURLToPath(new URL("../../../", import.meta.url))

/** The ```sh blocks of a Markdown text, in order. */
const shellBlocks = (markdown: string) =>
  [...markdown.matchAll(/^```(?:sh|bash|shell)([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    fragment: m[1]!.trim().split(/\s+/).includes("fragment"),
    code: m[2]!
  }))

/** The example folders (`examples/*`), each of which has a README. */
const examples = readdirSync(join(root, "examples"), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) =>
  `examples/${d.name}`
)

const pages = [
  ...readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`),
  ...examples.map((dir) => `${dir}/README.md`).filter((f) => existsSync(join(root, f))),
  ...readdirSync(join(root, "packages")).map((p) => `packages/${p}/README.md`).filter((f) => {
    try {
      readFileSync(join(root, f))
      return true
    } catch {
      return false
    }
  })
]
const blocksOf = (page: string) => shellBlocks(readFileSync(join(root, page), "utf8"))

/** `curl` that fails on an HTTP error status, as every call of the docs is meant to succeed. */
const prelude = `curl() { command curl --fail-with-body --silent --show-error "$@"; echo; }\n`

describe("the documentation's shell blocks", () => {
  it("every page's sh blocks are found, and the runnable ones are these", () => {
    const runnable = pages.filter((page) => blocksOf(page).some((b) => !b.fragment)).sort()
    // docs/upgrading.md's backup and restore blocks run in Backup.test.ts, around a stopped serve.
    expect(runnable).toEqual(["docs/api.md", "docs/cli.md", "docs/upgrading.md", "docs/webhooks.md"])
    // A fragment still parses as shell.
    for (const page of pages) {
      for (const block of blocksOf(page)) {
        const parsed = spawnSync("bash", ["-n"], { input: block.code, encoding: "utf8" })
        expect(parsed.stderr, `${page}:\n${block.code}`).toBe("")
      }
    }
  })

  it("every example folder has a README that says what it shows, how to run it and what it prints", () => {
    expect(examples.length).toBeGreaterThanOrEqual(4)
    for (const dir of examples) {
      const readme = join(root, dir, "README.md")
      expect(existsSync(readme), `${dir} has no README.md`).toBe(true)
      const text = readFileSync(readme, "utf8")
      expect(text, dir).toMatch(/^# /)
      expect(text, dir).toMatch(/^## Run it$/m)
      // The command that runs it (from the repository's root, or in its folder), and what it prints.
      expect(text, dir).toMatch(/```sh fragment\n[^`]*(node examples\/|cd examples\/[^`]*\bnode )/)
      expect(text, dir).toMatch(/prints/)
    }
  })

  it("the pages cite only what the repository holds: relative links resolve, no outside design documents", () => {
    for (const page of [...pages, "README.md"]) {
      const text = readFileSync(join(root, page), "utf8")
      expect(text, page).not.toMatch(/\bDESIGN\b|SPEC\.md|\.\.\/shared\//)
      for (const [, target] of text.matchAll(/\]\((?!https?:|mailto:|#)([^)#\s]+)(?:#[^)]*)?\)/g)) {
        expect(existsSync(join(root, dirname(page), target!)), `${page} links to ${target}`).toBe(true)
      }
    }
  })

  it.scoped(
    "the runnable blocks of each page run in one shell against a served instance",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDataDir
        const data = join(dir, ".appexec")
        for (const app of readdirSync(join(root, "packages/server/apps"))) {
          cpSync(join(root, "packages/server/apps", app), join(dir, app), { recursive: true })
        }
        const serve = yield* spawnAppexec(["serve", "--port", "0", "--rate-limit", "1000"], { APPEXEC_DATA: data })
        const [, key] = yield* serve.waitFor(/\): (aex_[A-Za-z0-9_-]+)/, "stdout")
        const [, url] = yield* serve.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, "stderr")
        const env = {
          ...process.env,
          PATH: `${join(root, "node_modules/.bin")}:${process.env["PATH"]}`,
          APPEXEC_DATA: data,
          APPEXEC_BASE_URL: url!,
          APPEXEC_API_KEY: key!
        }
        for (const page of ["docs/api.md", "docs/cli.md"]) {
          const script = blocksOf(page).filter((b) => !b.fragment).map((b) => b.code).join("\n")
          const ran = spawnSync("bash", ["-e", "-o", "pipefail", "-c", prelude + script], {
            cwd: dir,
            env,
            encoding: "utf8",
            timeout: 60_000
          })
          expect(ran.status, `${page}:\n${script}\n--- output ---\n${ran.stdout}\n${ran.stderr}`).toBe(0)
          // Each curl answered JSON with a `data` field.
          const answers = ran.stdout.split("\n").filter((line) => line.startsWith("{"))
          expect(answers.length, page).toBeGreaterThan(0)
          for (const answer of answers) expect(JSON.parse(answer), page).toHaveProperty("data")
        }
      }),
    60_000
  )

  it.scoped(
    "the webhooks page's openssl check verifies both signatures of a real delivery, and refuses an altered one",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDataDir
        const { baseUrl, deliveries: [delivery], key } = yield* realDelivery
        const script = blocksOf("docs/webhooks.md").filter((b) => !b.fragment).map((b) => b.code).join("\n")
        const env = {
          ...process.env,
          APPEXEC_BASE_URL: baseUrl,
          APPEXEC_API_KEY: key,
          WEBHOOK_ID: headerOf(delivery, "webhook-id"),
          WEBHOOK_TIMESTAMP: headerOf(delivery, "webhook-timestamp"),
          WEBHOOK_SIGNATURE: headerOf(delivery, "webhook-signature"),
          SERVICE_TIMESTAMP: headerOf(delivery, "x-service-webhook-timestamp"),
          SERVICE_SIGNATURE: headerOf(delivery, "x-service-webhook-signature")
        }
        const check = (body: Buffer) => {
          writeFileSync(join(dir, "body.json"), body)
          return spawnSync("bash", ["-e", "-o", "pipefail", "-c", prelude + script], {
            cwd: dir,
            env,
            encoding: "utf8",
            timeout: 30_000
          })
        }
        const verified = check(delivery.rawBody)
        expect(verified.status, `${script}\n--- output ---\n${verified.stdout}\n${verified.stderr}`).toBe(0)
        expect(verified.stdout.match(/Signature Verified Successfully/g)).toHaveLength(2)
        const altered = check(Buffer.from(delivery.rawBody.toString("utf8").replace("Ada", "Bob")))
        expect(altered.status).not.toBe(0)
        expect(altered.stdout).toContain("Signature Verification Failure")
      }),
    60_000
  )

  it.scoped("the scaling page's API command starts on PostgreSQL, its flags as written", () =>
    Effect.gen(function*() {
      const [block] = blocksOf("docs/scaling.md").filter((b) => b.code.includes("appexec serve --no-worker"))
      const command = block!.code.replace(/\\\n\s*/g, "").split("\n").find((line) => line.startsWith("appexec serve"))!
      // This machine's address and a free port, for the production ones.
      const args = command.replace(/\s+#.*$/, "").split(/\s+/).slice(1)
        .map((arg, i, all) => all[i - 1] === "--host" ? "127.0.0.1" : all[i - 1] === "--port" ? "0" : arg)
      expect(args).toEqual(expect.arrayContaining(["--trust-proxy", "1", "--no-worker", "--public-url"]))
      const env = yield* postgres.env
      const serve = yield* spawnAppexec(args, env)
      yield* serve.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+/, "stderr")
    }), 60_000)
})
