/**
 * `require` from this package's own folder, for what is loaded or found at run time (sharp, the
 * Tesseract engine, the language data packages): resolved from where `@appexec/nodes-ocr` is
 * installed even when this code runs inside the bundled `appexec` command, whose module sits in
 * `@appexec/server`.
 */
import { createRequire } from "node:module"

/** The `require` of `@appexec/nodes-ocr`'s folder. */
export const packageRequire: NodeJS.Require = createRequire(
  createRequire(import.meta.url).resolve("@appexec/nodes-ocr/package.json")
)
