/**
 * The OpenAI example apps through the compiled `appexec serve`, against a local server that
 * speaks OpenAI's chat and image routes (`TestOpenAiServer`, on 127.0.0.1; `APPEXEC_OPENAI_BASE_URL`
 * points the apps at it, `--allow-private-networks` lets the guarded client reach it). Without
 * their secret the provider example apps are absent and the start says they wait for it;
 * `appexec secrets set OPENAI_API_KEY` imports them at once, and they stay on the next start.
 * The chat app answers the model's text after a 429 waited out as its `Retry-After` says, the
 * image app an image this instance serves (decoded with sharp), a provider's error body that
 * echoes the token fails the run with its status only; the token is in no log line of the
 * server, no answer of the API and no output of the commands.
 *
 * On SQLite only: the apps and secrets go through the storage ports, whose contract suites run
 * on every storage.
 */
import { TestOpenAiServer } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import sharp from "sharp"
import { restartServe, spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

const TOKEN = "sk-proj-Zx81TqLm0c4vB7e2"

/** An API call to the server: status and parsed body. */
const api = (serve: { baseUrl: string; key: string }, path: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${serve.baseUrl}${path}`, {
      ...init,
      headers: { "x-api-key": serve.key, "content-type": "application/json", ...init.headers }
    })
    const text = await response.text()
    return { status: response.status, text, body: text === "" ? undefined : JSON.parse(text) }
  })

/** Runs `appexec …args` to its end, with `stdin` written to it; its exit code and output. */
const appexec = (args: ReadonlyArray<string>, env: Record<string, string> = {}, stdin?: string) =>
  Effect.gen(function*() {
    const child = yield* spawnAppexec(args, env)
    child.child.stdin.end(stdin ?? "")
    const { code } = yield* child.exited("60 seconds")
    return { code, stdout: child.output.stdout, stderr: child.output.stderr }
  })

const appNames = (serve: { baseUrl: string; key: string }) =>
  Effect.map(
    api(serve, "/v1/apps?limit=100"),
    (answer) => (answer.body.data as Array<{ name: string }>).map((app) => app.name)
  )

describe("appexec serve: the OpenAI example apps", () => {
  it.live(
    "absent without OPENAI_API_KEY, imported by secrets set; chat after a 429, an image, and the token nowhere",
    () =>
      Effect.gen(function*() {
        const png = yield* Effect.promise(() =>
          sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 20, g: 90, b: 160 } } }).png()
            .toBuffer()
        )
        const openai = yield* TestOpenAiServer.start({ token: TOKEN, image: png })
        const dataDir = yield* tempDataDir
        const env = { APPEXEC_OPENAI_BASE_URL: openai.baseUrl }
        const args = ["--allow-private-networks"]
        const serve = yield* startServe(dataDir, args, env)

        // No secret: the start says what waits for it, and no consumer sees the apps.
        yield* serve.waitFor(
          new RegExp(
            "Provider example app\\(s\\) waiting for a secret: fal image \\(FAL_KEY\\), OpenAI chat \\(OPENAI_API_KEY\\), " +
              "OpenAI image \\(OPENAI_API_KEY\\), Replicate image \\(REPLICATE_API_TOKEN\\); set one with: appexec secrets set NAME"
          ),
          "stderr"
        )
        const before = yield* appNames(serve)
        expect(before).toContain("Poster")
        expect(before).not.toContain("OpenAI chat")
        expect(before).not.toContain("OpenAI image")

        // The secret set while serve runs: the apps are imported at once.
        const set = yield* appexec(["secrets", "set", "OPENAI_API_KEY", "--data", dataDir], env, `${TOKEN}\n`)
        expect(set.code, set.stderr).toBe(0)
        expect(set.stdout).toBe(
          "set OPENAI_API_KEY for the instance\nImported the provider example app(s) OpenAI chat, OpenAI image, which needed OPENAI_API_KEY.\n"
        )
        const after = yield* appNames(serve)
        expect(after).toEqual(expect.arrayContaining(["OpenAI chat", "OpenAI image"]))
        // The others still wait for their own secret.
        expect(after).not.toContain("Replicate image")
        expect(after).not.toContain("fal image")

        // Chat, whose first answer is a 429: retried after Retry-After, then the model's text.
        openai.script("chat", {
          status: 429,
          headers: { "retry-after": "1" },
          body: { error: { message: "Rate limit reached", type: "requests", param: null, code: "rate_limit_exceeded" } }
        })
        const chat = yield* appexec(
          ["run", "OpenAI chat", "--input", "prompt=Where is the Fastnet lighthouse?", "--base-url", serve.baseUrl],
          { APPEXEC_API_KEY: serve.key }
        )
        expect(chat.code, chat.stderr).toBe(0)
        expect(chat.stdout).toContain("Answer (text): You said: Where is the Fastnet lighthouse?")
        const chatRequests = openai.received.filter((r) => r.path === "/v1/chat/completions")
        expect(chatRequests.map((r) => r.answer)).toEqual([429, 200])
        expect(chatRequests[1]!.headers["authorization"]).toBe(`Bearer ${TOKEN}`)
        expect(chatRequests[1]!.json).toMatchObject({
          model: "gpt-4o-mini",
          messages: [
            { role: "system", content: "You are a helpful assistant. Answer briefly." },
            { role: "user", content: "Where is the Fastnet lighthouse?" }
          ]
        })
        const listed = yield* api(serve, "/v1/executions?limit=10")
        const chatRun = (listed.body.data as Array<{ executionId: string; status: string }>)[0]!
        expect(chatRun.status).toBe("completed")
        const logs = yield* api(serve, `/v1/executions/${chatRun.executionId}/logs`)
        const messages = (logs.body.data as Array<{ message: string }>).map((line) => line.message)
        expect(messages).toContain(`POST 127.0.0.1:${openai.port} answered 429; retry 1 of 4 in 1s`)

        // Image: the PNG the model made, stored and served by this instance.
        const image = yield* appexec(
          ["run", "OpenAI image", "--input", "prompt=a lighthouse at dusk", "--base-url", serve.baseUrl],
          { APPEXEC_API_KEY: serve.key }
        )
        expect(image.code, image.stderr).toBe(0)
        const imageUrl = new RegExp(`^Image \\(image\\): (${serve.baseUrl}/media/\\S+)$`, "m").exec(image.stdout)?.[1]
        expect(imageUrl, image.stdout).toBeDefined()
        const downloaded = yield* Effect.promise(async () =>
          new Uint8Array(await (await fetch(imageUrl!)).arrayBuffer())
        )
        const meta = yield* Effect.promise(() => sharp(downloaded).metadata())
        expect([meta.format, meta.width, meta.height]).toEqual(["png", 64, 48])

        // A provider that echoes the token in its error body: the run fails with the status only.
        openai.script("chat", {
          status: 400,
          body: { error: { message: `Bad request from Bearer ${TOKEN}`, type: "invalid_request_error", code: null } }
        })
        const refused = yield* appexec(
          ["run", "OpenAI chat", "--input", "prompt=again", "--base-url", serve.baseUrl],
          { APPEXEC_API_KEY: serve.key }
        )
        expect(refused.code).not.toBe(0)
        expect(`${refused.stdout}${refused.stderr}`).toContain(
          "the provider refused the request (400 Bad Request)"
        )

        // The token in no answer of the API and no line the server or the commands wrote.
        const answers = [
          yield* api(serve, "/v1/executions?limit=10"),
          ...(yield* Effect.forEach(
            (listed.body.data as Array<{ executionId: string }>).map((e) => e.executionId),
            (id) => api(serve, `/v1/executions/${id}/logs`)
          ))
        ]
        const apps = (yield* api(serve, "/v1/apps?limit=100")).body.data as Array<{ appId: string }>
        for (const app of apps) answers.push(yield* api(serve, `/v1/apps/${app.appId}/workflow`))
        const secretsList = yield* appexec(["secrets", "list", "--data", dataDir])
        expect(secretsList.stdout).toMatch(/^OPENAI_API_KEY\tinstance\t/m)
        const everything = [
          ...answers.map((a) => a.text),
          serve.output.stdout,
          serve.output.stderr,
          set.stdout,
          set.stderr,
          chat.stdout,
          chat.stderr,
          image.stdout,
          refused.stdout,
          refused.stderr,
          secretsList.stdout
        ].join("\n")
        expect(serve.output.stderr).toContain("provider.openai: the provider refused the request (400 Bad Request)")
        expect(everything).not.toContain(TOKEN)

        // The next start finds them present and imports nothing again.
        serve.child.kill("SIGTERM")
        yield* serve.exited("30 seconds")
        const again = yield* restartServe(dataDir, args, env)
        yield* again.waitFor(/Create an API key with/, "stderr")
        expect(again.output.stderr).not.toContain("Imported")
        expect(again.output.stderr).toContain(
          "Provider example app(s) waiting for a secret: fal image (FAL_KEY), Replicate image (REPLICATE_API_TOKEN)"
        )
        const names = yield* appNames({ baseUrl: again.baseUrl, key: serve.key })
        expect(names.filter((name) => name === "OpenAI chat")).toHaveLength(1)
      }).pipe(Effect.scoped),
    180_000
  )
})
