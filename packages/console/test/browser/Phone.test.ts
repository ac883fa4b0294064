/**
 * The console on a phone, in a real Chromium against the compiled `appexec serve`: every view of
 * a signed-in key (sign-in, the apps, an app's page, a run, the runs) is laid out at 1280×800
 * and at 390×844, and at 390 pixels the page is no wider than the screen
 * (`document.documentElement.scrollWidth`) and no element reaches past it. The runs and a
 * webhook's attempts become stacked rows whose every cell (Created and Took too) is in view. The
 * operator views are checked the same way in `Operator.test.ts`. The run form's folded priority
 * box fits too, and sends what is typed in it: the server's refusal shows under the form.
 */
import { TestReceiver } from "@appexec/testing"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Chromium from "../support/Chromium.js"
import * as ConsolePage from "../support/ConsolePage.js"
import { fitOf } from "../support/PageGeometry.js"
import * as ServedConsole from "../support/ServedConsole.js"

const served = Layer.merge(ServedConsole.layer, Chromium.layer)

/**
 * The view shown in `tab` at 1280 pixels, then on a phone: it fits each screen, and a screenshot
 * of each is written (`name`, `name-phone`). The tab is left at the phone's size.
 */
const fitsBoth = (tab: ConsolePage.Tab, name: string) =>
  Effect.gen(function*() {
    for (const [size, shot] of [[ConsolePage.DESKTOP, name], [ConsolePage.PHONE, `${name}-phone`]] as const) {
      yield* tab.resize(size)
      const fit = yield* Effect.promise(() => fitOf(tab.page))
      expect({ view: shot, overflowing: fit.overflowing }).toEqual({ view: shot, overflowing: [] })
      expect(fit.innerWidth).toBe(size.width)
      expect(fit.scrollWidth).toBeLessThanOrEqual(size.width)
      yield* tab.screenshot(shot)
    }
  })

/** The boxes of the cells of `column` (its `data-label`) in the rows of the table `testId`. */
const cellsOf = (tab: ConsolePage.Tab, testId: string, column: string) =>
  Effect.promise(() =>
    tab.page.$$eval(
      `[data-testid='${testId}'] tbody td[data-label='${column}']`,
      (cells) =>
        cells.map((cell) => {
          const box = cell.getBoundingClientRect()
          return { left: box.left, right: box.right, top: box.top, height: box.height, text: cell.textContent ?? "" }
        })
    )
  )

layer(served, { timeout: "90 seconds", excludeTestServices: true })("the console on a phone", (it) => {
  it.scoped("signs in and lists the apps on a phone's screen", () =>
    Effect.gen(function*() {
      const { key } = yield* ServedConsole.ServedConsole
      const tab = yield* ConsolePage.open()
      yield* tab.goto("/")
      yield* tab.fill("API key", key)
      yield* fitsBoth(tab, "sign-in")
      yield* tab.click("Sign in")
      yield* tab.waitFor("ul[aria-label='Apps'] .app-card")
      yield* fitsBoth(tab, "apps")
      expect(tab.errors).toEqual([])
    }), 60_000)

  it.scoped("shows an app's page, its form and its workflow, within a phone's width", () =>
    Effect.gen(function*() {
      const tab = yield* ConsolePage.open()
      yield* tab.signIn()
      for (const app of ["Greeting", "Poster", "Ken Burns"]) {
        yield* tab.resize(ConsolePage.DESKTOP)
        yield* tab.openApp(app)
        yield* fitsBoth(tab, `app-${app.toLowerCase().replace(/\s+/g, "-")}`)
      }
      expect(tab.errors).toEqual([])
    }), 60_000)

  it.scoped(
    "takes a priority in the run form's folded box on a phone; the server's refusal is shown",
    () =>
      Effect.gen(function*() {
        const { cli } = yield* ServedConsole.ServedConsole
        yield* cli("workspaces", "set", "default", "--max-priority", "2")
        const tab = yield* ConsolePage.open()
        yield* tab.signIn()
        yield* tab.resize(ConsolePage.PHONE)
        yield* tab.openApp("Greeting")
        yield* tab.fill("Who", "Ada")
        yield* Effect.promise(() => tab.page.click("[data-testid='priority-field'] summary"))
        const priority = (value: string) => Effect.promise(() => tab.page.locator("#run-priority").fill(value))
        yield* priority("5")
        yield* fitsBoth(tab, "app-priority")
        yield* tab.click("Run")
        yield* tab.waitUntil(
          "the refusal is shown",
          () =>
            document.querySelector(".run-form .notice.error")?.textContent?.includes("`priority` 5 is above 2") === true
        )
        yield* priority("2")
        yield* tab.run()
        expect(tab.errors).toEqual([])
        yield* cli("workspaces", "set", "default", "--max-priority", "none")
      }),
    60_000
  )

  it.scoped(
    "shows a run with its webhook's attempts, and the runs, as stacked rows on a phone",
    () =>
      Effect.gen(function*() {
        const receiver = yield* TestReceiver.start()
        const tab = yield* ConsolePage.open()
        yield* tab.signIn()
        yield* tab.openApp("Greeting")
        yield* tab.fill("Who", "a phone")
        yield* tab.click("Webhook", "DisclosureTriangle")
        yield* tab.fill("Webhook URL", receiver.url())
        yield* tab.run()
        yield* tab.waitForStatus("completed")
        yield* receiver.next
        yield* tab.waitFor("[data-testid='webhook-delivery'][data-status='delivered'] tbody tr")
        yield* fitsBoth(tab, "run")
        const answers = yield* Effect.promise(() =>
          tab.page.$$eval(
            "[data-testid='webhook-delivery'] tbody td[data-label='Answer']",
            (cells) => cells.map((cell) => ({ right: cell.getBoundingClientRect().right, text: cell.textContent }))
          )
        )
        expect(answers).toEqual([{ right: expect.any(Number), text: expect.stringMatching(/^2\d\d$/) }])
        expect(answers[0]!.right).toBeLessThanOrEqual(ConsolePage.PHONE.width)

        // A failed run too, so that the list has a run to select.
        yield* tab.resize(ConsolePage.DESKTOP)
        yield* tab.runApp("Lookup", { Code: ServedConsole.BROKEN_CODE })
        yield* tab.waitForStatus("failed")
        yield* tab.click("Runs", "link")
        yield* tab.waitFor("[data-testid='runs-table'] tbody tr[data-status='failed'] input[type='checkbox']")
        yield* tab.waitFor("[data-testid='runs-table'] tbody tr[data-status='completed']")
        yield* fitsBoth(tab, "runs")
        // Each row is a block of its cells one under the other, Created and Took whole and in view.
        const created = yield* cellsOf(tab, "runs-table", "Created")
        const took = yield* cellsOf(tab, "runs-table", "Took")
        const status = yield* cellsOf(tab, "runs-table", "Status")
        expect(created.length).toBeGreaterThanOrEqual(2)
        created.forEach((cell, i) => {
          for (const shown of [cell, took[i]!]) {
            expect(shown.height).toBeGreaterThan(0)
            expect(shown.left).toBeGreaterThanOrEqual(0)
            expect(shown.right).toBeLessThanOrEqual(ConsolePage.PHONE.width)
          }
          expect(cell.top).toBeGreaterThan(status[i]!.top)
          expect(took[i]!.top).toBeGreaterThan(cell.top)
        })
        // Each cell is named by its column, as the table's head is out of sight.
        const named = yield* Effect.promise(() =>
          tab.page.$eval(
            "[data-testid='runs-table'] tbody td[data-label='Took']",
            (cell) => getComputedStyle(cell, "::before").content
          )
        )
        expect(named).toBe(`"Took"`)
        expect(tab.errors).toEqual([])
      }),
    90_000
  )
})
