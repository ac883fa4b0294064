/**
 * An embedded instance among the processes of its database (docs/operations.md#the-fleet): named
 * by `name` (else `host:pid`), role `embedded`, its row written as it starts and deleted by
 * `close()`.
 */
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { mkdtempSync, rmSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { createAppexec } from "../src/index.js"

const folder = mkdtempSync(join(tmpdir(), "appexec-embed-identity-"))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

/** The rows of `processes` in the database at `file`: name, role and process id. */
const processes = (file: string) => {
  const db = new Database(file, { readonly: true })
  try {
    return db.prepare("SELECT name, role, process_id FROM processes ORDER BY name").all() as Array<
      { name: string; role: string; process_id: string }
    >
  } finally {
    db.close()
  }
}

describe("an embedded instance's identity", () => {
  it("is listed by its name (else host:pid) with the role embedded while it runs, and leaves with close()", async () => {
    const file = join(folder, "appexec.db")
    const named = await createAppexec({ storage: { sqlite: file }, name: "host-app", drain: 0, logger: false })
    const plain = await createAppexec({ storage: { sqlite: file }, worker: false, drain: 0, logger: false })
    const rows = processes(file)
    expect(rows.map(({ name, role }) => ({ name, role }))).toEqual(
      [{ name: "host-app", role: "embedded" }, { name: `${hostname()}:${process.pid}`, role: "embedded" }]
        .sort((a, b) => (a.name < b.name ? -1 : 1))
    )
    expect(rows.find((r) => r.name === "host-app")!.process_id).toMatch(/^host-app#[0-9a-f]{6}$/)
    await named.close()
    expect(processes(file).map((r) => r.name)).toEqual([`${hostname()}:${process.pid}`])
    await plain.close()
    expect(processes(file)).toEqual([])
  })
})
