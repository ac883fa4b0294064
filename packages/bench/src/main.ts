/**
 * Runs every benchmark module in turn and prints each figure as `name: value unit`.
 * To add a benchmark, export a `Benchmark` from a module and list it in `benchmarks`.
 *
 * `npm run bench` runs them all; `npm run bench -- queue` runs the ones named.
 */
import { Console, Effect } from "effect"
import { type Benchmark, format } from "./Benchmark.js"
import * as Cli from "./cli.js"
import * as ConsoleWeight from "./console.js"
import * as Embed from "./embed.js"
import * as Graphile from "./graphile.js"
import * as Http from "./http.js"
import * as Images from "./images.js"
import * as Live from "./live.js"
import * as Media from "./media.js"
import * as Polling from "./polling.js"
import * as Queue from "./queue.js"
import * as Scaling from "./scaling.js"
import * as Streams from "./streams.js"
import * as Uploads from "./uploads.js"
import * as Webhooks from "./webhooks.js"

const benchmarks: ReadonlyArray<Benchmark> = [
  Cli.benchmark,
  ConsoleWeight.benchmark,
  Queue.benchmark,
  Scaling.benchmark,
  Graphile.benchmark,
  Images.benchmark,
  Webhooks.benchmark,
  Http.benchmark,
  Polling.benchmark,
  Live.benchmark,
  Streams.benchmark,
  Uploads.benchmark,
  Media.benchmark,
  Embed.benchmark
]

const only = process.argv.slice(2)
const selected = only.length === 0 ? benchmarks : benchmarks.filter((b) => only.includes(b.name))

const program = Effect.forEach(selected, (benchmark) => benchmark.run((figure) => Console.log(format(figure))), {
  discard: true
})

Effect.runPromise(program).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
