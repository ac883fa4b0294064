/**
 * PostgreSQL asked for in a project that installed the embedding tarballs without
 * `@appexec/postgres`: `createAppexec` must refuse with a `ConfigurationError` that gives the
 * line to install it. Run by `scripts/pack-test.mjs` under plain `node`.
 */
import { ConfigurationError, createAppexec } from "@appexec/embed"

const refusal = await createAppexec({ storage: { postgres: "postgres://127.0.0.1:1/appexec" }, logger: false }).then(
  async (appexec) => {
    await appexec.close()
    throw new Error("createAppexec started on PostgreSQL without @appexec/postgres installed")
  },
  (error) => error
)
if (!(refusal instanceof ConfigurationError) || !refusal.message.includes("npm install @appexec/postgres")) {
  throw refusal
}
console.log(`refused: ${refusal.message}`)
