/**
 * Command startup: how long `appexec --help` takes, as a user's shell runs it (a fresh node
 * process on the compiled command). Figure: the median of 11 runs, and the slowest.
 */
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import type { Benchmark } from "./Benchmark.js"

const bin = fileURLToPath(new URL("../../server/dist/appexec.js", import.meta.url))

/** The benchmark. */
export const benchmark: Benchmark = {
  name: "cli",
  run: (report) =>
    Effect.gen(function*() {
      const times: Array<number> = []
      for (let i = 0; i < 11; i++) {
        const began = performance.now()
        execFileSync(process.execPath, [bin, "--help"], { stdio: "ignore" })
        times.push(performance.now() - began)
      }
      times.sort((a, b) => a - b)
      yield* report({ name: "appexec --help, median of 11", value: Math.round(times[5]!), unit: "ms" })
      yield* report({ name: "appexec --help, slowest of 11", value: Math.round(times[10]!), unit: "ms" })
      yield* report({ name: "appexec --help, goal", value: 500, unit: "ms" })
    })
}
