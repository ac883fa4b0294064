/**
 * What the ComfyUI process tests share: a directory of apps holding the text-to-image app of the
 * ComfyUI test workflows (for `serve --apps`), and a JSON fetch.
 */
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { app, textToImage } from "../../../nodes-comfyui/test/support/Workflows.js"

/** A directory with the app `ComfyUI text to image` in it, removed with the scope. */
export const appsDir = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "appexec-comfy-apps-"))
    writeFileSync(join(dir, "comfyui.json"), JSON.stringify({ ...app(textToImage), public: true }))
    return dir
  }),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** The JSON answer of `url`. */
export const json = (url: string, init: RequestInit = {}) =>
  Effect.promise(() => fetch(url, init).then(async (r) => (await r.json()) as { data: Record<string, unknown> }))

/** The API of `serve` for its ComfyUI app: the key's headers, and a start of the app with `inputs` (the execution id). */
export const comfyuiApi = (serve: { readonly baseUrl: string; readonly key: string }) =>
  Effect.gen(function*() {
    const headers = { "x-api-key": serve.key, "content-type": "application/json" }
    const apps = yield* json(`${serve.baseUrl}/v1/apps?search=ComfyUI`, { headers })
    const appId = (apps.data as unknown as Array<{ appId: string }>)[0]!.appId
    const start = (inputs: Record<string, string>) =>
      Effect.map(
        json(`${serve.baseUrl}/v1/apps/${appId}/executions`, {
          method: "POST",
          headers,
          body: JSON.stringify({ inputs })
        }),
        (answer) => String(answer.data["executionId"])
      )
    return { headers, start }
  })
