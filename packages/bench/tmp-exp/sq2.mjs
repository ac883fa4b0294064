import Database from "better-sqlite3"
const bench = (label, db, sql, p) => { const s = db.prepare(sql); for (let r = 0; r < 2; r++) { const t = performance.now(); for (let i = 0; i < 100000; i++) s.get(p); if (r) console.log(label, ((performance.now() - t) * 10).toFixed(2), "ns/100 -> us", ((performance.now() - t) / 100).toFixed(3)) } }
const a = new Database("/tmp/srv1/appexec/appexec.db")
console.log(a.pragma("journal_mode", {simple:true}), a.pragma("synchronous", {simple:true}), a.pragma("cache_size", {simple:true}), a.pragma("mmap_size", {simple:true}))
bench("appexec rev", a, 'select "revision" from "key_revision" where "id" = ?', [1])
const r = new Database("/tmp/raw.db")
console.log(r.pragma("journal_mode", {simple:true}), r.pragma("synchronous", {simple:true}))
bench("raw key", r, "select workspace_id, revoked_at from api_keys where hash = ?", ["x"])
bench("raw exec", r, "select body from executions where execution_id = ? and workspace_id = ?", ["ff50957c-8541-4cd7-b13e-d4815f97fe54", "w1"])
const m = new Database(":memory:"); m.exec("create table k (id integer primary key, revision integer); insert into k values (1, 0)")
bench("mem rev", m, "select revision from k where id = ?", [1])
