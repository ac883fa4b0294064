const N = 1e6
let sink = 0
const mk = (i) => ({ "content-type": "application/json", ...{ etag: '"abc' + (i & 7) + '"' } })
const rl = (i) => ({ "ratelimit-limit": "1000", "ratelimit-remaining": String(i & 1023), "ratelimit-reset": "30" })
for (let r = 0; r < 3; r++) {
  let t = performance.now()
  for (let i = 0; i < N; i++) { const h = { ...mk(i), ...rl(i), "x-request-id": "id" }; sink += h["x-request-id"].length }
  const a = (performance.now() - t) * 1000 / N
  t = performance.now()
  for (let i = 0; i < N; i++) { const h = Object.assign({}, mk(i), rl(i)); h["x-request-id"] = "id"; sink += h["x-request-id"].length }
  const b = (performance.now() - t) * 1000 / N
  t = performance.now()
  for (let i = 0; i < N; i++) { const m = mk(i), q = rl(i); const h = { ...m }; for (const k in q) h[k] = q[k]; h["x-request-id"] = "id"; sink += h["x-request-id"].length }
  const c = (performance.now() - t) * 1000 / N
  console.log(`spread ${a.toFixed(3)} assign ${b.toFixed(3)} forin ${c.toFixed(3)} us`)
}
