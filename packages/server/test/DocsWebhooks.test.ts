/**
 * The ten-line Standard Webhooks verifier of docs/webhooks.md, run as written: its ```js block is
 * written to a module and imported, then given real deliveries of the compiled `appexec serve`
 * (a `start` event and a completion) with the `whpk_` key of the published key set, and altered
 * copies of them, which it must refuse.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { headerOf, realDelivery } from "./support/RealDelivery.js"

const root = fileURLToPath(new URL("../../../", import.meta.url))

/** The ```js block under "A verifier in ten lines of JavaScript". */
const verifierSource = () => {
  const page = readFileSync(join(root, "docs/webhooks.md"), "utf8")
  const section = page.slice(page.indexOf("### A verifier in ten lines of JavaScript"))
  const block = /^```js\n([\s\S]*?)^```$/m.exec(section)
  if (block === null) throw new Error("docs/webhooks.md has no ```js block under its verifier heading")
  return block[1]!
}

type Verify = (rawBody: Uint8Array, headers: Headers, whpk: string) => Promise<boolean>

/** The block as a module, imported from a temp file removed with the scope. */
const importVerifier = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-docs-js-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
).pipe(
  Effect.flatMap((dir) =>
    Effect.promise(async () => {
      const file = join(dir, "verify.mjs")
      writeFileSync(file, verifierSource())
      const module = (await import(pathToFileURL(file).href)) as { readonly verifyStandardWebhook: Verify }
      return module.verifyStandardWebhook
    })
  )
)

describe("docs/webhooks.md: the JavaScript verifier", () => {
  it("is at most a dozen lines, on Web Crypto alone", () => {
    const source = verifierSource()
    expect(source.trim().split("\n").length).toBeLessThanOrEqual(12)
    expect(source).not.toMatch(/\bimport\b|require\(/)
  })

  it.scopedLive("verifies real deliveries of appexec serve, and refuses altered ones", () =>
    Effect.gen(function*() {
      const verify = yield* importVerifier
      const { baseUrl, deliveries, key } = yield* realDelivery
      const keySet = yield* Effect.promise(() =>
        fetch(`${baseUrl}/v1/webhooks/signing-key`, { headers: { "x-api-key": key } }).then((r) =>
          r.json() as Promise<{ keys: Array<{ whpk: string }> }>
        )
      )
      const whpk = keySet.keys[0]!.whpk
      const headersOf = (delivery: (typeof deliveries)[number], changes: Record<string, string> = {}) =>
        new Headers({
          "webhook-id": headerOf(delivery, "webhook-id"),
          "webhook-timestamp": headerOf(delivery, "webhook-timestamp"),
          "webhook-signature": headerOf(delivery, "webhook-signature"),
          ...changes
        })
      const types = deliveries.map((d) => JSON.parse(d.rawBody.toString("utf8")).type)
      expect(types.sort()).toEqual(["completed", "start"])
      for (const delivery of deliveries) {
        const body = new Uint8Array(delivery.rawBody)
        expect(yield* Effect.promise(() => verify(body, headersOf(delivery), whpk))).toBe(true)
        const altered = new TextEncoder().encode(delivery.rawBody.toString("utf8").replace("Ada", "Bob"))
        expect(yield* Effect.promise(() => verify(altered, headersOf(delivery), whpk))).toBe(false)
        const otherId = headersOf(delivery, { "webhook-id": "another-message" })
        expect(yield* Effect.promise(() => verify(body, otherId, whpk))).toBe(false)
        const stale = headersOf(delivery, { "webhook-timestamp": String(Math.floor(Date.now() / 1000) - 400) })
        expect(yield* Effect.promise(() => verify(body, stale, whpk))).toBe(false)
      }
    }), 60_000)
})
