#!/usr/bin/env node
// The `appexec` command's entry: it loads the compiled command (`dist/appexec.js`, one ES module).
// This file is committed, so npm links `node_modules/.bin/appexec` at install time, before any
// build; until `npm run build` has run it says so instead of failing with a module error.
const compiled = new URL("../dist/appexec.js", import.meta.url)
try {
  await import(compiled.href)
} catch (error) {
  const missing = error?.code === "ERR_MODULE_NOT_FOUND" && String(error.message).includes(compiled.pathname)
  if (!missing) throw error
  process.stderr.write(
    "appexec: the command is not built yet (dist/appexec.js is missing): run `npm run build` first\n"
  )
  process.exit(1)
}
