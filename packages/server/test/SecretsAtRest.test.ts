/**
 * Secrets at rest in `appexec serve`'s data directory, over a real process: the directory is the
 * owner's only (0700) and every file in it 0600 (database, `-wal`, `-shm`, master key, media
 * secret); the signing seed is stored sealed; a key stored in the clear by an earlier version is
 * sealed at the next start and keeps its kid; `APPEXEC_MASTER_KEY` replaces the key file, and a
 * start with another master key is refused.
 */
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { generateKeyPairSync } from "node:crypto"
import { existsSync, readdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { restartServe, spawnServe, startServe, tempDataDir } from "./support/ServeProcess.js"

const modeOf = (path: string) => statSync(path).mode & 0o777

/** Every file under `dir`, recursively. */
const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)]
  )

const storedSecrets = (dataDir: string) => {
  const db = new Database(join(dataDir, "appexec.db"), { readonly: true, fileMustExist: true })
  try {
    return db.prepare("SELECT kid, secret_key AS secret FROM signing_keys ORDER BY seq").all() as Array<
      { kid: string; secret: string }
    >
  } finally {
    db.close()
  }
}

const signingKeySet = (baseUrl: string, key: string) =>
  Effect.promise(() =>
    fetch(`${baseUrl}/v1/webhooks/signing-key`, { headers: { "x-api-key": key } }).then((r) =>
      r.json() as Promise<{ keys: Array<{ kid: string }> }>
    )
  )

const stop = (serve: { readonly child: { kill: (signal: NodeJS.Signals) => boolean } }) =>
  Effect.sync(() => serve.child.kill("SIGTERM"))

describe("secrets at rest", () => {
  it.scoped(
    "the data directory is 0700, every file in it 0600, and the signing seed is sealed",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const serve = yield* startServe(dataDir)
        expect((yield* signingKeySet(serve.baseUrl, serve.key)).keys).toHaveLength(1)
        expect(modeOf(dataDir)).toBe(0o700)
        const files = filesUnder(dataDir)
        expect(files.map((f) => f.slice(dataDir.length + 1))).toEqual(
          expect.arrayContaining(["appexec.db", "appexec.db-wal", "appexec.db-shm", "master.key", "media.secret"])
        )
        for (const file of files) expect([file, modeOf(file)]).toEqual([file, 0o600])
        const [stored] = storedSecrets(dataDir)
        expect(stored!.secret).toMatch(/^sealed:v1:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$/)
        yield* stop(serve)
        yield* serve.exited("10 seconds")
      }),
    60_000
  )

  it.scoped(
    "a key stored in the clear is sealed at start, keeps its kid, and the master key comes from the environment",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const jwk = generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" })
        const masterKey = Buffer.alloc(32, 9).toString("base64url")
        const env = { APPEXEC_MASTER_KEY: masterKey }
        const first = yield* startServe(dataDir, ["--signing-key-jwk", JSON.stringify(jwk)], env)
        const kid = (yield* signingKeySet(first.baseUrl, first.key)).keys[0]!.kid
        yield* stop(first)
        yield* first.exited("10 seconds")
        expect(existsSync(join(dataDir, "master.key"))).toBe(false)
        // What an earlier version stored: the seed in hex.
        const db = new Database(join(dataDir, "appexec.db"))
        db.prepare("UPDATE signing_keys SET secret_key = ?").run(Buffer.from(jwk.d!, "base64url").toString("hex"))
        db.close()
        expect(storedSecrets(dataDir)[0]!.secret).toMatch(/^[0-9a-f]{64}$/)

        const second = yield* restartServe(dataDir, [], env)
        yield* second.waitFor(/signing key \S+ sealed with the master key/, "stderr")
        const [sealed] = storedSecrets(dataDir)
        expect(sealed).toMatchObject({ kid })
        expect(sealed!.secret.startsWith("sealed:v1:")).toBe(true)
        yield* stop(second)
        yield* second.exited("10 seconds")

        // Without the master key (a key file is generated, another key): the start is refused.
        const refused = yield* spawnServe(dataDir)
        yield* refused.waitFor(/masterKey/, "stderr")
        const { code } = yield* refused.exited("20 seconds")
        expect(code).not.toBe(0)
      }),
    90_000
  )
})
