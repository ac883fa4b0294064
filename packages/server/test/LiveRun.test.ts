/**
 * `appexec run` as users run it (the compiled command, a real `appexec serve` on SQLite), in a
 * pipe: it follows the execution's event stream and prints plain lines on stderr — its status,
 * its node's progress in steps of at least 10% up to 100% — with no ANSI code, and its output on
 * stdout exactly as before.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

/** Waits two seconds (reporting its progress), then echoes its message. */
const slowApp = {
  name: "Slow two",
  public: true,
  nodes: [
    { id: "message", type: "input.text", label: "Message", config: { name: "message", required: true } },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms: 2000 } },
    { id: "reply", type: "output.text", label: "Reply" }
  ],
  edges: [
    { source: "message", target: "wait" },
    { source: "wait", target: "reply" }
  ]
}

describe("appexec run in a pipe, against appexec serve", () => {
  it.scopedLive(
    "prints its status and the progress of its node as plain lines, then its output",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const serve = yield* startServe(dataDir)
        const file = join(dataDir, "slow.json")
        writeFileSync(file, JSON.stringify(slowApp))
        const imported = yield* spawnAppexec(["apps", "import", file, "--public", "--data", dataDir])
        expect((yield* imported.exited("30 seconds")).code, imported.output.stderr).toBe(0)

        const run = yield* spawnAppexec(["run", "Slow two", "--input", "message=hi", "--base-url", serve.baseUrl], {
          APPEXEC_API_KEY: serve.key
        })
        const { code } = yield* run.exited("60 seconds")
        const { stdout, stderr } = run.output
        expect(code, stderr).toBe(0)
        expect(stdout).toBe("Reply (text): hi\n")
        expect(stderr).not.toContain("\x1b")
        const lines = stderr.trimEnd().split("\n")
        expect(lines.filter((line) => /^running · \d+s$/.test(line)).length, stderr).toBe(1)
        const progress = lines.filter((line) => line.startsWith("[wait] "))
        for (const line of progress) expect(line).toMatch(/^\[wait\] \d{1,3}% \d s of 2 s$/)
        const percents = progress.map((line) => Number(/(\d+)%/.exec(line)![1]))
        expect(percents.length).toBeGreaterThan(1)
        expect(percents.at(-1)).toBe(100)
        percents.slice(1).forEach((p, i) => expect(p - percents[i]!).toBeGreaterThanOrEqual(10))
        expect(lines.at(-1)).toMatch(/^completed in \ds \(execution [0-9a-f-]{36}\)$/)
      }),
    60_000
  )
})
