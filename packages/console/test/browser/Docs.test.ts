/**
 * The API reference page at `/docs`, in a real Chromium against the compiled `appexec serve`,
 * under the `Content-Security-Policy` it is served with (not bypassed): its inline scripts run
 * (allowed by their hashes), so the reference renders the API's endpoints, and the policy blocks
 * nothing the page needs (only Scalar's probe of `new Function`, which it catches, is refused).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Chromium from "../support/Chromium.js"
import * as ConsolePage from "../support/ConsolePage.js"
import * as ServedConsole from "../support/ServedConsole.js"

const served = Layer.merge(ServedConsole.layer, Chromium.layer)

/** A violation of the page's policy as the page saw it. */
interface Violation {
  readonly directive: string
  readonly blocked: string
}

layer(served, { timeout: "90 seconds", excludeTestServices: true })("the API reference page", (it) => {
  it.scoped(
    "renders the API's endpoints under its own Content-Security-Policy, which blocks nothing it needs",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* ServedConsole.ServedConsole
        const tab = yield* ConsolePage.open()
        // Every violation of the policy, from the first script on.
        yield* Effect.promise(() =>
          tab.page.evaluateOnNewDocument(() => {
            const seen: Array<{ directive: string; blocked: string }> = []
            Object.assign(window, { violations: seen })
            document.addEventListener("securitypolicyviolation", (event) => {
              seen.push({ directive: event.effectiveDirective, blocked: event.blockedURI })
            })
          })
        )
        const response = yield* Effect.promise(() =>
          tab.page.goto(`${baseUrl}/docs`, { waitUntil: "domcontentloaded" })
        )
        expect(response?.headers()["content-security-policy"]).toContain("script-src 'sha256-")
        expect(response?.headers()["x-content-type-options"]).toBe("nosniff")
        // Scalar's script ran: the reference shows the endpoints of the API definition.
        yield* tab.waitUntil(
          "the reference shows the start endpoint",
          () => document.body.innerText.includes("/v1/apps/{appId}/executions")
        )
        yield* tab.screenshot("docs")
        const violations = yield* Effect.promise(() =>
          tab.page.evaluate(() => (window as unknown as { readonly violations: ReadonlyArray<Violation> }).violations)
        )
        expect(violations.filter((v) => v.blocked !== "eval")).toEqual([])
        expect(tab.errors).toEqual([])
      }),
    90_000
  )
})
