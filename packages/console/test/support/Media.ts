/**
 * Real media for the console's browser tests, and the API read from the test's side: a PNG drawn
 * with sharp (and written to a temp file for a file picker), an upload made straight through
 * `POST /v1/uploads`, an execution read back as the server holds it, and an image at a URL
 * downloaded and decoded with sharp.
 */
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import sharp from "sharp"
import type * as ConsolePage from "./ConsolePage.js"

/** A tab of `ConsolePage.open`. */
export type Tab = Effect.Effect.Success<ReturnType<typeof ConsolePage.open>>

/** A `width`×`height` PNG: a gradient from blue to orange, so that it decodes to something. */
export const pngOf = (width: number, height: number) =>
  Effect.promise(() => {
    const pixels = Buffer.alloc(width * height * 3)
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = (y * width + x) * 3
        pixels[i] = Math.round((255 * x) / width)
        pixels[i + 1] = Math.round((160 * y) / height)
        pixels[i + 2] = 200 - Math.round((200 * x) / width)
      }
    }
    return sharp(pixels, { raw: { width, height, channels: 3 } }).png().toBuffer()
  })

/** `bytes` written to a file `name` in a temp folder removed with the scope: its path. */
export const tempFile = (name: string, bytes: Uint8Array) =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-console-upload-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.map((dir) => {
    const path = join(dir, name)
    writeFileSync(path, bytes)
    return path
  }))

/** `{ data }` of a `GET` of the API at `path` with `key`; any status but 200 fails the test. */
export const readApi = (baseUrl: string, key: string, path: string) =>
  Effect.promise(async () => {
    const answer = await fetch(`${baseUrl}${path}`, { headers: { "x-api-key": key } })
    const body = await answer.text()
    if (answer.status !== 200) throw new Error(`GET ${path} answered ${answer.status}: ${body}`)
    return (JSON.parse(body) as { data: { readonly inputs?: Record<string, string> } }).data
  })

/** `bytes` uploaded as `contentType` through `POST /v1/uploads`: the upload. */
export const uploadOf = (baseUrl: string, key: string, bytes: Uint8Array, contentType: string) =>
  Effect.promise(async () => {
    const answer = await fetch(`${baseUrl}/v1/uploads`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": contentType },
      body: new Uint8Array(bytes)
    })
    const body = await answer.text()
    if (answer.status !== 201) throw new Error(`POST /v1/uploads answered ${answer.status}: ${body}`)
    return (JSON.parse(body) as { data: { readonly url: string; readonly contentType: string } }).data
  })

/** The image at `url`, downloaded and decoded: its format and size. */
export const decodeImageAt = (url: string) =>
  Effect.promise(async () => {
    const answer = await fetch(url)
    if (answer.status !== 200) throw new Error(`GET ${url} answered ${answer.status}`)
    const { format, height, width } = await sharp(Buffer.from(await answer.arrayBuffer())).metadata()
    return { format, width, height }
  })

/**
 * Drops a file `name` of `type` holding `bytes` on the drop zone of the parameter `parameter`,
 * as a browser does (`dragenter`, `dragover`, then `drop`, each carrying a `DataTransfer` that
 * holds the file).
 */
export const dropFile = (tab: Tab, parameter: string, name: string, type: string, bytes: Uint8Array) =>
  Effect.promise(() =>
    tab.page.evaluate(
      (parameter: string, name: string, type: string, base64: string) => {
        const zone = document.querySelector(`[data-parameter='${parameter}'] [data-testid='drop-zone']`)
        if (zone === null) throw new Error(`no drop zone for ${parameter}`)
        const data = new DataTransfer()
        data.items.add(new File([Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))], name, { type }))
        for (const event of ["dragenter", "dragover", "drop"]) {
          zone.dispatchEvent(new DragEvent(event, { dataTransfer: data, bubbles: true, cancelable: true }))
        }
      },
      parameter,
      name,
      type,
      Buffer.from(bytes).toString("base64")
    )
  )
