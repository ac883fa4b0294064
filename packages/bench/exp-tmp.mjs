import { SqliteClient } from "@appexec/sqlite"
import { Effect } from "effect"
import Database from "better-sqlite3"
import { rmSync } from "node:fs"
import { randomUUID } from "node:crypto"
const f = "/tmp/engine2-exp.db"
rmSync(f, { force: true }); rmSync(f+"-wal", { force: true })
await Effect.runPromise(Effect.scoped(SqliteClient.make({ filename: f })))
const db = new Database(f)
db.pragma("journal_mode = WAL"); db.pragma("synchronous = NORMAL")
db.pragma("foreign_keys = ON")
console.log(db.prepare("select sql from sqlite_master where name='executions'").get().sql)
// need app/workflow/workspace rows for FKs?
const fk = db.prepare("pragma foreign_key_list(executions)").all(); console.log(fk.map(r=>r.table+"."+r.from))
db.pragma("foreign_keys = OFF")
const ins = db.prepare(`insert into executions (execution_id, workflow_id, app_id, workspace_id, user_id, status, inputs, outputs, created_at) values (?, 'w','a','ws','u','queued','{}','[]',?)`)
db.transaction(() => { for (let i = 0; i < 10000; i++) ins.run(randomUUID(), Date.now()) })()
const next = db.prepare(`select "seq", "workspace_id" from "executions" where "status" in ('queued', 'running') and "workspace_id" > ? and ("lease_expires_at" is null or "lease_expires_at" <= ?) order by "workspace_id", "seq" limit 1`)
const claim = db.prepare(`update executions set lease_worker='w', lease_token=1, lease_expires_at=? where seq=? returning *`)
const done = db.prepare(`update executions set status='completed', completed_at=?, lease_worker=null, lease_token=null, lease_expires_at=null where seq=?`)
let tn = 0, tn2 = 0
const inflight = []
for (let i = 0; i < 10000; i++) {
  const now = Date.now()
  let t = performance.now()
  const r = next.get("", now)
  tn += performance.now() - t
  t = performance.now()
  next.get("ws", now)
  tn2 += performance.now() - t
  claim.get(now + 30000, r.seq)
  inflight.push(r.seq)
  if (inflight.length > 4) done.run(now, inflight.shift())
}
console.log("next", (1000*tn/10000).toFixed(1), "us; next after ws", (1000*tn2/10000).toFixed(1))
