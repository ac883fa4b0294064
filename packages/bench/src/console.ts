/**
 * The console's weight (docs/console.md): what a browser downloads to show it, as served and
 * gzipped, from the sizes its build records (`@appexec/console`'s `sizes`). The goal: under 150 KiB
 * of gzipped script.
 */
import { ConsoleAssets } from "@appexec/console"
import { Effect } from "effect"
import type { Benchmark } from "./Benchmark.js"

const kib = (bytes: number) => Math.round((bytes / 1024) * 10) / 10

/** The benchmark. */
export const benchmark: Benchmark = {
  name: "console",
  run: (report) =>
    Effect.gen(function*() {
      const { script, scriptGzip, style, styleGzip } = ConsoleAssets.sizes
      yield* report({ name: "console.script", value: kib(script), unit: "KiB" })
      yield* report({ name: "console.script_gzipped", value: kib(scriptGzip), unit: "KiB" })
      yield* report({ name: "console.style", value: kib(style), unit: "KiB" })
      yield* report({ name: "console.style_gzipped", value: kib(styleGzip), unit: "KiB" })
      yield* report({ name: "console.goal.script_gzipped, under", value: 150, unit: "KiB" })
    })
}
