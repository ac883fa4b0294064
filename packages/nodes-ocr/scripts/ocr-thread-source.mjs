/**
 * Compiles `ocr-thread.mjs` into one CommonJS script and writes it as a string constant to
 * `src/internal/OcrThreadSource.ts`, which the pool hands to `new Worker(source, { eval: true })`
 * (`scripts/worker-source.mjs` of the repository); the engine it loads is found by the parent
 * and named by its absolute path.
 *
 * `node scripts/ocr-thread-source.mjs` rewrites the file; `--check` fails when it is stale
 * (a test runs the check).
 */
import { fileURLToPath } from "node:url"
import { writeOrCheck } from "../../../scripts/worker-source.mjs"

await writeOrCheck({
  entry: fileURLToPath(new URL("./ocr-thread.mjs", import.meta.url)),
  target: fileURLToPath(new URL("../src/internal/OcrThreadSource.ts", import.meta.url)),
  what: "The script of an OCR worker thread, compiled from `scripts/ocr-thread.mjs`.",
  command: "node scripts/ocr-thread-source.mjs"
})
