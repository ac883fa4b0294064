/**
 * `appexec run` stopped with Ctrl-C while it follows its execution, as users run it (the compiled
 * command beside a real `appexec serve`): it has said the execution's id as soon as it started,
 * and on SIGINT it says the execution goes on and names the command that follows it again;
 * `appexec executions watch ID` then follows it to its end and prints its output. With no server
 * listening, `run` says so at once and names `appexec serve` and `APPEXEC_BASE_URL`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { join } from "node:path"
import { spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

/** Waits three seconds, then echoes its message. */
const slowApp = {
  name: "Slow three",
  public: true,
  nodes: [
    { id: "message", type: "input.text", label: "Message", config: { name: "message", required: true } },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms: 3000 } },
    { id: "reply", type: "output.text", label: "Reply" }
  ],
  edges: [
    { source: "message", target: "wait" },
    { source: "wait", target: "reply" }
  ]
}

describe("appexec run, stopped and followed again", () => {
  it.scopedLive(
    "Ctrl-C says the execution goes on and how to follow it; executions watch follows it to its outputs",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const serve = yield* startServe(dataDir)
        const file = join(dataDir, "slow.json")
        writeFileSync(file, JSON.stringify(slowApp))
        const imported = yield* spawnAppexec(["apps", "import", file, "--public", "--data", dataDir])
        expect((yield* imported.exited("30 seconds")).code, imported.output.stderr).toBe(0)
        const api = { APPEXEC_API_KEY: serve.key, APPEXEC_BASE_URL: serve.baseUrl }

        const run = yield* spawnAppexec(["run", "Slow three", "--input", "message=hi"], api)
        const [, executionId] = yield* run.waitFor(/execution ([0-9a-f-]{36}) started\n/, "stderr")
        run.child.kill("SIGINT")
        yield* run.exited("30 seconds")
        expect(run.output.stdout).toBe("")
        expect(run.output.stderr).toContain(
          `Stopped following execution ${executionId}; it goes on. Follow it again with: ` +
            `appexec executions watch ${executionId}\n`
        )

        const watch = yield* spawnAppexec(["executions", "watch", executionId!], api)
        const watched = yield* watch.exited("60 seconds")
        expect(watched.code, watch.output.stderr).toBe(0)
        expect(watch.output.stdout).toBe("Reply (text): hi\n")
        expect(watch.output.stderr).toContain(`following execution ${executionId}\n`)
        expect(watch.output.stderr).toMatch(new RegExp(`completed in \\d+s \\(execution ${executionId}\\)\\n$`))

        // Once it has ended, watch prints its outputs at once.
        const again = yield* spawnAppexec(["executions", "watch", executionId!], api)
        expect((yield* again.exited("30 seconds")).code).toBe(0)
        expect(again.output.stdout).toBe("Reply (text): hi\n")
      }),
    120_000
  )

  it.scopedLive(
    "with no server listening, says so and names appexec serve and APPEXEC_BASE_URL",
    () =>
      Effect.gen(function*() {
        const port = yield* Effect.async<number>((resume) => {
          const probe = createServer()
          probe.listen(0, "127.0.0.1", () => {
            const address = probe.address()
            probe.close(() =>
              resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
            )
          })
        })
        const run = yield* spawnAppexec(["run", "Greeting", "--input", "who=Ada"], {
          APPEXEC_API_KEY: `aex_${"A".repeat(43)}`,
          APPEXEC_BASE_URL: `http://127.0.0.1:${port}`
        })
        expect((yield* run.exited("30 seconds")).code).toBe(1)
        // That it does not wait to retry is held by RunCommand.test.ts, on virtual time.
        expect(run.output.stderr).toBe(
          `appexec: No appexec server answers at http://127.0.0.1:${port}; is \`appexec serve\` running? ` +
            "(Another address: APPEXEC_BASE_URL or --base-url.)\n"
        )
      }),
    60_000
  )
})
