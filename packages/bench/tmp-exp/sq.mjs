import Database from "better-sqlite3"
const db = new Database("/tmp/srv1/appexec/appexec.db", { readonly: false })
const rev = db.prepare('select "revision" from "key_revision" where "id" = ?')
const view = db.prepare('select "execution_id", "workflow_id", "workspace_id", "status", "outputs", "error_message", "created_at", "started_at", "completed_at" from "executions" where "execution_id" = ?')
const all = db.prepare('select * from "executions" where "execution_id" = ?')
for (let r = 0; r < 3; r++) for (const [n, s, p] of [["rev", rev, [1]], ["view", view, ["ff50957c-8541-4cd7-b13e-d4815f97fe54"]], ["all", all, ["ff50957c-8541-4cd7-b13e-d4815f97fe54"]]]) {
  const t = performance.now(); let k = 0
  for (let i = 0; i < 100000; i++) k += s.get(p) ? 1 : 0
  console.log(n, ((performance.now() - t) * 10).toFixed(2), "us", k)
}
