/**
 * Compiles `signer-worker.mjs` (and the noble code it signs with) into one CommonJS script and
 * writes it as a string constant to `src/internal/SignerWorkerSource.ts`, which the pool hands to
 * `new Worker(source, { eval: true })` (`scripts/worker-source.mjs` of the repository).
 *
 * `node scripts/signer-worker-source.mjs` rewrites the file; `--check` fails when it is stale
 * (a test runs the check).
 */
import { fileURLToPath } from "node:url"
import { writeOrCheck } from "../../../scripts/worker-source.mjs"

await writeOrCheck({
  entry: fileURLToPath(new URL("./signer-worker.mjs", import.meta.url)),
  target: fileURLToPath(new URL("../src/internal/SignerWorkerSource.ts", import.meta.url)),
  what:
    "The script of a signer worker thread, compiled from `scripts/signer-worker.mjs` with the\n * `@noble/ed25519` code it signs with.",
  command: "node scripts/signer-worker-source.mjs"
})
