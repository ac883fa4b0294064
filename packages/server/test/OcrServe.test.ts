/**
 * `appexec serve` reading text while it answers: four "Read text" executions of a dense page
 * keep the OCR worker thread busy for seconds, and meanwhile polls of an execution are answered
 * as promptly as on an idle server, because no reading runs on the thread that answers HTTP.
 * Then every execution completes with the page's text. Its settings are the command's: a page
 * larger than `--ocr-max-pixels` is refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import sharp from "sharp"
import { startServe, tempDataDir } from "./support/ServeProcess.js"

/** A page of `lines` lines of dark text on white, as PNG bytes. */
const page = (lines: number) =>
  Effect.promise(() =>
    sharp(Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" width="1400" height="${120 + lines * 42}">` +
        `<rect width="100%" height="100%" fill="#ffffff"/>` +
        Array.from({ length: lines }, (_, i) =>
          `<text x="40" y="${70 + i * 42}" font-family="DejaVu Sans" font-size="26" fill="#1a1a1a">` +
          `Row ${i + 1} of a long ledger of harbour goods and their prices</text>`).join("") +
        `</svg>`
    )).png().toBuffer()
  )

describe("appexec serve with image.ocr at work", () => {
  it.live(
    "answers polls promptly while the OCR thread reads a queue of pages, then completes every reading",
    () =>
      Effect.gen(function*() {
        const serve = yield* startServe(yield* tempDataDir)
        const call = (path: string, init: RequestInit = {}) =>
          Effect.promise(async () => {
            const response = await fetch(`${serve.baseUrl}${path}`, {
              ...init,
              headers: { "x-api-key": serve.key, ...init.headers }
            })
            const etag = response.headers.get("etag") ?? ""
            // 304: unchanged since the ETag given, no body.
            if (response.status === 304) return { etag, data: {} }
            return { etag, ...((await response.json()) as { readonly data: Record<string, unknown> }) }
          })

        const upload = yield* call("/v1/uploads", {
          method: "POST",
          headers: { "content-type": "image/png" },
          body: yield* page(24)
        })
        const apps = yield* call("/v1/apps?search=read%20text")
        const appId = (apps.data as unknown as ReadonlyArray<{ readonly appId: string }>)[0]!.appId
        const started = yield* Effect.forEach(Array.from({ length: 4 }), () =>
          call(`/v1/apps/${appId}/executions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ inputs: { image: upload.data["url"] } })
          }))
        const ids = started.map((answer) => String(answer.data["executionId"]))
        const statusOf = (id: string) => Effect.map(call(`/v1/executions/${id}`), (answer) => answer.data["status"])

        // The first reading is under way: each answer held until the execution changes.
        let first = yield* call(`/v1/executions/${ids[0]}`)
        while (first.data["status"] !== "running") {
          const next = yield* call(`/v1/executions/${ids[0]}`, {
            headers: { prefer: "wait=30", "if-none-match": first.etag }
          })
          if (next.data["status"] !== undefined) first = next
        }
        const times: Array<number> = []
        for (let i = 0; i < 30; i++) {
          const t0 = performance.now()
          yield* statusOf(ids[3]!)
          times.push(performance.now() - t0)
        }
        const statuses = yield* Effect.forEach(ids, statusOf)
        // The readings were still going on when the last poll was answered.
        expect(statuses.filter((status) => status !== "completed").length, String(statuses)).toBeGreaterThan(0)
        const sorted = [...times].sort((a, b) => a - b)
        expect(sorted[15]!, String(sorted)).toBeLessThan(50)
        expect(sorted[29]!, String(sorted)).toBeLessThan(500)

        for (const id of ids) {
          const done = yield* call(`/v1/executions/${id}`, { headers: { prefer: "wait=60" } })
          expect(done.data["status"]).toBe("completed")
          const outputs = done.data["outputs"] as ReadonlyArray<{ readonly value: string }>
          expect(outputs[0]!.value.split("\n")[23]).toBe("Row 24 of a long ledger of harbour goods and their prices")
        }
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "takes its limits from the command's settings: a page over --ocr-max-pixels is refused, naming the limit",
    () =>
      Effect.gen(function*() {
        const serve = yield* startServe(yield* tempDataDir, ["--ocr-max-pixels", "500000"])
        const call = (path: string, init: RequestInit = {}) =>
          Effect.promise(async () => {
            const response = await fetch(`${serve.baseUrl}${path}`, {
              ...init,
              headers: { "x-api-key": serve.key, ...init.headers }
            })
            return (await response.json()) as { readonly data: Record<string, unknown> }
          })
        const upload = yield* call("/v1/uploads", {
          method: "POST",
          headers: { "content-type": "image/png" },
          body: yield* page(12)
        })
        const apps = yield* call("/v1/apps?search=read%20text")
        const appId = (apps.data as unknown as ReadonlyArray<{ readonly appId: string }>)[0]!.appId
        const started = yield* call(`/v1/apps/${appId}/executions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ inputs: { image: upload.data["url"] } })
        })
        let done = started
        while (done.data["status"] !== "completed" && done.data["status"] !== "failed") {
          done = yield* call(`/v1/executions/${String(started.data["executionId"])}`, {
            headers: { prefer: "wait=30" }
          })
        }
        // 1400×624 is 0.9 megapixels, over the 0.5 given.
        expect(done.data["status"]).toBe("failed")
        expect(String(done.data["errorMessage"])).toContain("text is read in images of up to 0.5 megapixels")
      }).pipe(Effect.scoped),
    60_000
  )
})
