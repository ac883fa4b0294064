/**
 * Preloaded with `node --require` (and so in every worker thread too): any attempt to reach the
 * network, a socket connected, a name looked up or a fetch, is refused and written to stderr as
 * `network attempt: …` straight to the file descriptor, from whichever thread made it.
 */
"use strict"
const dns = require("node:dns")
const { writeSync } = require("node:fs")
const net = require("node:net")
const { isMainThread } = require("node:worker_threads")

/** @type {(what: string) => never} */
const refuse = (what) => {
  writeSync(2, `network attempt: ${what} (${isMainThread ? "main thread" : "worker thread"})\n`)
  throw new Error(`network refused: ${what}`)
}
net.Socket.prototype.connect = function connect() {
  return refuse("socket connect")
}
// Assigned so (not `dns.lookup =`) as the replacement has no `__promisify__`: nothing here promisifies it.
Object.assign(dns, { lookup: () => refuse("dns lookup") })
dns.promises.lookup = () => refuse("dns lookup")
globalThis.fetch = async () => refuse("fetch")
