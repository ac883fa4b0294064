/**
 * A load generator in a process of its own: autocannon on every target of the JSON spec in
 * `argv[2]` at once (`connections` each, `duration` seconds), printed on stdout as one JSON
 * object: the results in the targets' order, and the CPU the generator used. The start path on
 * PostgreSQL measures through it (`http.ts`): a generator inside the benchmark's own process, hours
 * into a full run, shares that process's heap and event loop with what the earlier parts left there.
 */
import autocannon from "autocannon"

/** What one target is sent (GET unless told). */
export interface Target {
  readonly url: string
  readonly method?: "GET" | "POST"
  readonly headers: Record<string, string>
  readonly body?: string
}

/** The spec `argv[2]` holds. */
export interface Spec {
  readonly targets: ReadonlyArray<Target>
  readonly connections: number
  readonly duration: number
}

/** What the benchmark reads of each result. */
export type Result = Pick<autocannon.Result, "requests" | "latency" | "non2xx" | "errors">

/** The answer: each target's result, in order, and the CPU this process used in all (µs). */
export interface Answer {
  readonly results: ReadonlyArray<Result>
  readonly cpuMicros: number
}

const spec = JSON.parse(process.argv[2] ?? "{}") as Spec
const cpuBefore = process.cpuUsage()
const results = await Promise.all(
  spec.targets.map((target) => autocannon({ ...target, connections: spec.connections, duration: spec.duration }))
)
const cpu = process.cpuUsage(cpuBefore)
const answer: Answer = {
  results: results.map(({ errors, latency, non2xx, requests }) => ({ requests, latency, non2xx, errors })),
  cpuMicros: cpu.user + cpu.system
}
process.stdout.write(`${JSON.stringify(answer)}\n`)
