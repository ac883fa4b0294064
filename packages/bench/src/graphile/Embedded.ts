/**
 * appexec embedded, the shape the library exists for: this process as the host, with
 * `createAppexec` of `@appexec/embed` on the run's PostgreSQL (its API and its worker in this
 * process, `concurrency` 16, no webhooks to send). It starts `COUNT` no-op executions through the
 * embedding API, 64 at a time, while its worker runs them; the figure is executions started and
 * completed a second, from the first start to the moment none is left open (the same count of
 * what is left as the drains'), beside graphile-worker's unbatched drain of the same run. First
 * `WARMUP` executions, untimed, so that what the host does once (its modules, its connections,
 * its hot code) is not in the figure.
 */
import { createAppexec } from "@appexec/embed"
import { Effect } from "effect"
import * as NoopApp from "../NoopApp.js"
import * as ProcessCpu from "../ProcessCpu.js"
import * as PostgresServer from "../servers/postgres.js"
import * as Drains from "./Drains.js"
import { CONCURRENCY, COUNT, WARMUP } from "./Sizes.js"

/** What the embedded run measured. */
export interface Embedded extends Drains.Drain {
  /** The starts alone a second, while the worker ran beside them. */
  readonly startsPerSecond: number
}

const OPEN = Drains.anyLeft("executions WHERE status IN ('queued', 'running')")

/** The embedded start-and-run of `COUNT` executions on a fresh database of `server`. */
export const appexecEmbedded = (server: PostgresServer.Server) =>
  Effect.scoped(Effect.gen(function*() {
    const url = yield* Drains.database(server)
    const counter = yield* Drains.counting(url)
    const appexec = yield* Effect.acquireRelease(
      Effect.promise(() =>
        createAppexec({
          storage: { postgres: url },
          logger: false,
          console: false,
          docs: false,
          masterKey: Buffer.alloc(32, 7).toString("base64"),
          config: { workerConcurrency: CONCURRENCY }
        })
      ),
      (instance) => Effect.promise(() => instance.close())
    )
    const { appId } = yield* Effect.promise(() => appexec.apps.import(NoopApp.noop, { public: true }))
    const startAll = (count: number, label: string) =>
      Effect.promise(async () => {
        let next = 0
        const lane = async () => {
          while (next < count) {
            const i = next++
            await appexec.executions.start(appId, { in: `${label} ${i}` })
          }
        }
        await Promise.all(Array.from({ length: 64 }, lane))
      })
    yield* startAll(WARMUP, "warm-up")
    yield* Drains.drained(counter, OPEN)
    yield* Drains.analyze(counter, "executions")
    const serverBefore = yield* PostgresServer.backendsCpu(url)
    const commitsBefore = yield* Drains.commits(counter)
    const cpuBefore = ProcessCpu.ofProcess(process.pid)
    const first = Drains.wallNow()
    yield* startAll(COUNT, "run")
    const started = Drains.wallNow()
    const { asked, end } = yield* Drains.drained(counter, OPEN)
    const cpu = (ProcessCpu.ofProcess(process.pid) - cpuBefore) / COUNT
    const serverMicros = PostgresServer.cpuUsed(serverBefore, yield* PostgresServer.backendsCpu(url))
    const committed = yield* Drains.commitsSince(counter, commitsBefore, asked)
    const { rows } = yield* Effect.promise(() =>
      counter.query<{ failed: string }>(
        "SELECT count(*) FILTER (WHERE status <> 'completed') AS failed FROM executions"
      )
    )
    if (Number(rows[0]!.failed) > 0) yield* Effect.dieMessage(`${rows[0]!.failed} executions did not complete`)
    return {
      perSecond: (COUNT / (end - first)) * 1000,
      startsPerSecond: (COUNT / (started - first)) * 1000,
      workerCpu: [cpu],
      serverCpu: serverMicros / COUNT,
      commits: committed / COUNT
    } satisfies Embedded
  }))
