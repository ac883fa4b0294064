/**
 * The backup and restore of docs/upgrading.md on SQLite, run as written: `serve` with a master key
 * from the environment, a secret, an execution that read it (with its webhook) and one that made an
 * image; stopped, backed up with the page's first block, wiped, restored with its second, started
 * again: the executions and the image's URL, the secret (a node reads it again) and the webhook
 * signing key (the same `kid`, signing the next webhook) are back.
 */
import { TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { appexecWith } from "./support/Command.js"
import { appDefinition, echoServer, finished, signingKeys, start, TOKEN } from "./support/EchoToken.js"
import { restartServe, startServe, tempDataDir } from "./support/ServeProcess.js"

const page = fileURLToPath(new URL("../../../docs/upgrading.md", import.meta.url))

/** The runnable ```sh blocks of the page: the backup, then the restore. */
const blocks = () => [...readFileSync(page, "utf8").matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)

/** Runs a block of the page in bash as a reader pastes it, with `env`. */
const runBlock = (code: string, env: Record<string, string>) =>
  Effect.sync(() =>
    spawnSync("bash", ["-e", "-o", "pipefail", "-c", code], { env: { ...process.env, ...env }, encoding: "utf8" })
  )

describe("backup and restore as docs/upgrading.md says (SQLite)", () => {
  it.scopedLive(
    "the executions, their media, the secret and the signing key are back after a wipe",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDataDir
        const data = join(dir, "data")
        const env = {
          APPEXEC_MASTER_KEY: randomBytes(32).toString("base64url"),
          APPEXEC_DATA: data,
          BACKUP: join(dir, "backup")
        }
        const [backup, restore] = blocks()
        expect(blocks()).toHaveLength(2)
        const echo = yield* echoServer
        const receiver = yield* TestReceiver.start()
        const args = ["--allow-private-networks", "--no-console"]

        const serve = yield* startServe(data, args, env)
        const definition = join(dir, "echo.json")
        writeFileSync(definition, JSON.stringify(appDefinition(echo)))
        const appId = (yield* appexecWith(env, "", "apps", "import", definition, "--public")).stdout.trim()
        expect((yield* appexecWith(env, TOKEN, "secrets", "set", "ECHO_TOKEN")).code).toBe(0)
        const echoed = yield* finished(
          serve.baseUrl,
          serve.key,
          yield* start(serve.baseUrl, serve.key, appId, { who: "before" }, receiver.url())
        )
        expect(echoed).toMatchObject({ status: "completed", outputs: [{ value: "before" }] })
        const poster = (yield* appexecWith(env, "", "apps", "list")).stdout.split("\n").find((l) =>
          l.endsWith("\tPoster")
        )!
        const drawn = yield* finished(
          serve.baseUrl,
          serve.key,
          yield* start(serve.baseUrl, serve.key, poster.split("\t")[0]!, { prompt: "kept" })
        )
        expect(drawn.status).toBe("completed")
        const imageUrl = new URL(String(drawn.outputs.find((o) => o.id === "poster")!.value))
        const image = yield* Effect.promise(async () => new Uint8Array(await (await fetch(imageUrl)).arrayBuffer()))
        const [signing] = yield* signingKeys(serve.baseUrl, serve.key)
        yield* receiver.next

        serve.child.kill("SIGTERM")
        yield* serve.exited("30 seconds")
        const backedUp = yield* runBlock(backup!, env)
        expect(backedUp.status, backedUp.stderr).toBe(0)
        rmSync(data, { recursive: true, force: true })
        expect(existsSync(data)).toBe(false)
        const restored = yield* runBlock(restore!, env)
        expect(restored.status, restored.stderr).toBe(0)

        const again = yield* restartServe(data, args, env)
        const url = again.baseUrl
        for (const before of [echoed, drawn]) {
          expect(yield* finished(url, serve.key, before.executionId)).toEqual(before)
        }
        // The media URL handed out before, on the restarted server: the same bytes.
        const fetched = yield* Effect.promise(async () => {
          const answer = await fetch(`${url}${imageUrl.pathname}${imageUrl.search}`)
          return { status: answer.status, bytes: new Uint8Array(await answer.arrayBuffer()) }
        })
        expect(fetched).toEqual({ status: 200, bytes: image })
        // The secret opens (the node's call is answered only with it), and the same key signs.
        expect((yield* signingKeys(url, serve.key))[0]!.kid).toBe(signing!.kid)
        const after = yield* finished(
          url,
          serve.key,
          yield* start(url, serve.key, appId, { who: "after" }, receiver.url())
        )
        expect(after).toMatchObject({ status: "completed", outputs: [{ value: "after" }] })
        const webhook = yield* receiver.next
        expect(webhook.executionId).toBe(after.executionId)
        expect(webhook.headers["x-service-webhook-key-id"]).toBe(signing!.kid)
        expect(TestReceiver.verifiedByNodeCrypto([signing!], webhook)).toBe(true)
      }),
    120_000
  )
})
