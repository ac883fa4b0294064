/**
 * Reads the text of the image file given as argument with the built `@appexec/nodes-ocr`
 * (`dist/`), under plain node, and prints it; then tries the network from the main thread and
 * from a worker thread, so that the caller sees its guard refuse both.
 */
import { Languages, OcrNodes, OcrPool } from "@appexec/nodes-ocr"
import { Effect, Either } from "effect"
import { readFileSync } from "node:fs"
import { Worker } from "node:worker_threads"
import { decode } from "../../dist/internal/Decoding.js"

const file = process.argv[2]
if (file === undefined) throw new Error("usage: read-offline.mjs IMAGE")

const program = Effect.gen(function*() {
  const { image } = yield* decode(readFileSync(file), 25_000_000)
  const pool = yield* OcrPool.OcrPool
  const found = yield* pool.read(image, { language: Either.getOrThrow(Languages.resolve("eng")) })
  return found.map((line) => line.words.map((word) => word.text).join(" ")).join("\n")
})
console.log(await Effect.runPromise(Effect.scoped(Effect.provide(program, OcrNodes.layer({ threads: 1 })))))

await fetch("http://127.0.0.1:9/").catch(() => console.log("main thread: fetch refused"))
await new Promise((resolve) => {
  const worker = new Worker(
    "fetch('http://127.0.0.1:9/').catch(() => require('node:worker_threads').parentPort.postMessage('refused'))",
    { eval: true }
  )
  worker.once("message", (message) => {
    console.log(`worker thread: fetch ${message}`)
    worker.terminate().then(resolve)
  })
})
