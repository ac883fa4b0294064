/**
 * Signing in to the console, in a real Chromium against the compiled `appexec serve`: the printed
 * key opens the apps (a wrong one is refused at once, and the key never shows in the address); a
 * key revoked with `appexec keys revoke` while a tab uses it signs that tab out on its next call.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Chromium from "../support/Chromium.js"
import * as ConsolePage from "../support/ConsolePage.js"
import * as ServedConsole from "../support/ServedConsole.js"

/** Where the console keeps the key (`Session.ts`). */
const STORAGE_KEY = "appexec.console.apiKey"

const served = Layer.merge(ServedConsole.layer, Chromium.layer)

layer(served, { timeout: "90 seconds", excludeTestServices: true })("signing in to the console", (it) => {
  it.scoped(
    "signs in with the printed key and lists the apps; a wrong key is refused at once",
    () =>
      Effect.gen(function*() {
        const { key } = yield* ServedConsole.ServedConsole
        const tab = yield* ConsolePage.open()
        yield* tab.goto("/")
        yield* tab.fill("API key", `aex_${"x".repeat(43)}`)
        yield* tab.click("Sign in")
        yield* tab.waitForText(".sign-in [role='alert']", "This key was refused. Check it and try again.")

        yield* tab.fill("API key", key)
        yield* tab.click("Sign in")
        yield* tab.waitFor("ul[aria-label='Apps'] .app-card")
        const names = yield* Effect.promise(() =>
          tab.page.$$eval("ul[aria-label='Apps'] .app-card h2", (headings) => headings.map((h) => h.textContent))
        )
        expect(names).toEqual(expect.arrayContaining(["Greeting", "Poster", "Slow echo", "Lookup", "Markup echo"]))
        expect(yield* tab.textOf("[data-testid='key-hint'] code")).toBe(`aex_${key.slice(4, 8)}…${key.slice(-4)}`)
        expect(tab.page.url()).not.toContain(key)
        expect(yield* Effect.promise(() => tab.page.evaluate((k) => sessionStorage.getItem(k), STORAGE_KEY))).toBe(key)
        yield* tab.screenshot("apps")

        yield* tab.fill("Search apps", "gradient", "searchbox")
        yield* tab.waitUntil(
          "the search lists Poster alone",
          () =>
            [...document.querySelectorAll("ul[aria-label='Apps'] .app-card h2")].map((h) => h.textContent).join() ===
              "Poster"
        )
        expect(tab.errors).toEqual([])
      }),
    60_000
  )

  it.scoped(
    "a key revoked while a tab is signed in with it signs the tab out on its next call",
    () =>
      Effect.gen(function*() {
        const served = yield* ServedConsole.ServedConsole
        const key = (yield* served.cli("keys", "create", "--workspace", "default", "--user", "revoked")).trim()
        expect(key).toMatch(/^aex_/)
        const tab = yield* ConsolePage.open()
        yield* tab.signIn(key)
        yield* tab.waitFor("ul[aria-label='Apps'] .app-card")

        // The key's id prefix: `aex_` and the next six characters.
        expect(yield* served.cli("keys", "revoke", key.slice(0, 10))).toContain("revoked 1")
        yield* tab.click("Runs", "link")
        yield* tab.waitForText(".sign-in [role='status']", "Your key was refused: sign in again")
        yield* tab.waitFor("::-p-aria([name='API key'][role='textbox'])")
        expect(yield* Effect.promise(() => tab.page.evaluate((k) => sessionStorage.getItem(k), STORAGE_KEY))).toBeNull()
        yield* tab.screenshot("signed-out")
        expect(tab.errors).toEqual([])
      }),
    60_000
  )
})
