/**
 * Running apps from the console, in a real Chromium against the compiled `appexec serve`: the
 * Greeting app from its form shows its text; the Poster app shows its image decoded in the page,
 * its label as the alt text; a slow run is canceled and ends failed with the cancel message; a
 * failed run is run again with an edited input and completes; several failed runs are selected in
 * the runs list and run again together, and the new runs are listed; a finished run's webhook is
 * redelivered to a real receiver; a run's webhook events are picked in its form, listed by event
 * on its page, and one of them redelivered; an output holding markup shows as text, with the page's
 * Content-Security-Policy turned off so that only the page's own rendering stands between the
 * markup and the DOM.
 */
import { TestReceiver } from "@appexec/testing"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Chromium from "../support/Chromium.js"
import * as ConsolePage from "../support/ConsolePage.js"
import * as ServedConsole from "../support/ServedConsole.js"

/** The error of a canceled run (docs/api.md, cancel). */
const CANCELED = "The execution was canceled."

/** Markup that would set `window.__xss` if the page ever wrote it as HTML. */
const MARKUP = `<img src=x onerror="window.__xss=1">`

const served = Layer.merge(ServedConsole.layer, Chromium.layer)

/** The text of the output `id` on a run's page. */
const output = (id: string) => `[data-output="${id}"] .output-text`

layer(served, { timeout: "90 seconds", excludeTestServices: true })("running apps from the console", (it) => {
  it.scoped("runs the Greeting app from its form and shows its text", () =>
    Effect.gen(function*() {
      const tab = yield* ConsolePage.open()
      yield* tab.signIn()
      yield* tab.runApp("Greeting", { Who: "Ada" }, { Tone: "formal" })
      yield* tab.waitForStatus("completed")
      yield* tab.waitForText(output("greeting"), "Hello Ada, in a formal tone.")
      const inputs = yield* Effect.promise(() =>
        tab.page.$$eval("[data-testid='run-inputs'] :is(dt, dd)", (cells) => cells.map((cell) => cell.textContent))
      )
      expect(inputs).toEqual(["who", "Ada", "tone", "formal"])
      yield* tab.screenshot("greeting-run")
      expect(tab.errors).toEqual([])
    }), 60_000)

  it.scoped(
    "runs the Poster app and shows its image decoded in the page, its label as the alt text",
    () =>
      Effect.gen(function*() {
        const tab = yield* ConsolePage.open()
        yield* tab.signIn()
        yield* tab.runApp("Poster", { Prompt: "A lighthouse at dusk" }, { Style: "neon" })
        yield* tab.waitForStatus("completed")
        const image = "[data-output='poster'] img.output-image"
        yield* tab.waitUntil(
          "the poster is decoded",
          (selector) => {
            const img = document.querySelector<HTMLImageElement>(selector)
            return img !== null && img.complete && img.naturalWidth > 0
          },
          image
        )
        const shown = yield* Effect.promise(() =>
          tab.page.$eval(image, (img) => ({ alt: img.alt, width: img.naturalWidth, height: img.naturalHeight }))
        )
        expect(shown).toEqual({ alt: "Poster", width: 512, height: 512 })
        yield* tab.waitForText(output("caption"), "A lighthouse at dusk (neon)")
        yield* tab.screenshot("poster-run")
        expect(tab.errors).toEqual([])
      }),
    60_000
  )

  it.scoped("cancels a slow run, which ends failed with the cancel message", () =>
    Effect.gen(function*() {
      const tab = yield* ConsolePage.open()
      yield* tab.signIn()
      yield* tab.runApp("Slow wait", { Message: "not for long" })
      yield* tab.waitForStatus("running")
      // The wait reports its progress from its first second: the run is under way in the page too.
      yield* tab.waitFor("[data-node='wait'] progress")
      yield* tab.click("Cancel")
      yield* tab.waitForStatus("failed")
      yield* tab.waitForText("[data-testid='run-error']", CANCELED)
      // Its progress bar shows where it stopped, not a wait going on.
      yield* tab.waitFor("[data-node='wait'][data-stopped='true']")
      expect(yield* tab.textOf("[data-node='wait'] .help")).toMatch(/^Stopped at \d+%: the run ended first\.$/)
      yield* tab.waitUntil("Cancel is gone", () =>
        ![...document.querySelectorAll("button")].some((b) => b.textContent === "Cancel"))
      yield* tab.screenshot("canceled-run")
      expect(tab.errors).toEqual([])
    }), 60_000)

  it.scoped("runs a failed run again with an edited input, and the new run completes", () =>
    Effect.gen(function*() {
      const tab = yield* ConsolePage.open()
      yield* tab.signIn()
      const failed = yield* tab.runApp("Lookup", { Code: ServedConsole.BROKEN_CODE })
      yield* tab.waitForStatus("failed")
      expect(yield* tab.textOf("[data-testid='run-error']")).toContain("500")
      yield* tab.screenshot("failed-run")

      yield* tab.click("Run again")
      // The form comes prefilled with this run's inputs.
      yield* tab.waitUntil(
        "the form holds the failed run's code",
        (code) =>
          document.querySelector<HTMLInputElement>("[data-testid='run-again-form'] input[name='code']")?.value ===
            code,
        ServedConsole.BROKEN_CODE
      )
      yield* tab.fill("Code", "fine")
      yield* tab.screenshot("run-again-form")
      const again = yield* tab.run(failed)
      expect(again).not.toBe(failed)
      yield* tab.waitForStatus("completed")
      yield* tab.waitForText(output("answer"), "found fine")
      yield* tab.screenshot("run-again-completed")
      expect(tab.errors).toEqual([])
    }), 60_000)

  it.scoped(
    "selects several failed runs in the runs list and runs them again, and the new runs are listed",
    () =>
      Effect.gen(function*() {
        const tab = yield* ConsolePage.open()
        yield* tab.signIn()
        const failed: Array<string> = []
        for (const _ of [1, 2]) {
          failed.push(yield* tab.runApp("Lookup", { Code: ServedConsole.BROKEN_CODE }))
          yield* tab.waitForStatus("failed")
        }
        yield* tab.click("Runs", "link")
        yield* tab.choose("Status", "failed")
        for (const id of failed) yield* tab.waitFor(`[data-testid='runs-table'] tr[data-execution-id='${id}']`)
        // Only failed runs are listed once the filtered page has replaced the unfiltered one (the
        // failed runs are in both, so their rows alone do not tell that it has).
        yield* tab.waitUntil(
          "only failed runs are listed",
          () =>
            [...document.querySelectorAll("[data-testid='runs-table'] tbody tr")].every((row) =>
              row.getAttribute("data-status") === "failed"
            )
        )
        for (const id of failed) yield* tab.click(`Select run ${id.slice(-8)}`, "checkbox")
        yield* tab.waitForText(".selection .help", "2 selected")
        yield* tab.click("Run again")
        yield* tab.waitFor("[data-testid='rerun-result']")
        expect(yield* tab.textOf("[data-testid='rerun-result'] p")).toBe("Started 2 runs.")
        const started = yield* Effect.promise(() =>
          tab.page.$$eval(
            "[data-testid='rerun-result'] a",
            (links) => links.map((link) => link.getAttribute("href")?.split("/").pop() ?? "")
          )
        )
        expect(started).toHaveLength(2)
        expect(started.filter((id) => failed.includes(id))).toEqual([])
        // The list is read again: with every status shown, the new runs are there, each of Lookup.
        // (Read in one look at the page: the list may be drawn again between two looks.)
        yield* tab.choose("Status", "")
        yield* tab.waitUntil(
          "both new runs are listed, each of Lookup",
          (ids) =>
            ids.every((id) =>
              document.querySelector(`[data-testid='runs-table'] tr[data-execution-id='${id}'] td:nth-child(3)`)
                ?.textContent === "Lookup"
            ),
          started
        )
        yield* tab.screenshot("runs-run-again")
        // Each new run ran the failed run's inputs again.
        yield* tab.click(`Run ${started[0]!.slice(-8)}`, "link")
        yield* tab.waitForStatus("failed")
        expect(yield* tab.textOf("[data-testid='run-inputs'] dd")).toBe(ServedConsole.BROKEN_CODE)
        expect(tab.errors).toEqual([])
      }),
    90_000
  )

  it.scoped("redelivers a finished run's webhook to a real receiver", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start()
      const tab = yield* ConsolePage.open()
      yield* tab.signIn()
      yield* tab.openApp("Greeting")
      // The label "Who" differs from the input's name "who" in case only: the help does not repeat it.
      expect(yield* Effect.promise(() => tab.page.$$("[data-parameter='who'] .param-name"))).toHaveLength(0)
      // At 1280 pixels the form and the workflow stand side by side.
      const [form, workflow] = yield* Effect.promise(() =>
        tab.page.$$eval(".app-columns > .card", (cards) =>
          cards.map((card) => {
            const box = card.getBoundingClientRect()
            return { top: box.top, left: box.left, right: box.right }
          }))
      )
      expect(workflow!.top).toBe(form!.top)
      expect(workflow!.left).toBeGreaterThan(form!.right)
      yield* tab.fill("Who", "a receiver")
      // A <summary> is a DisclosureTriangle in Chromium's accessibility tree.
      yield* tab.click("Webhook", "DisclosureTriangle")
      yield* tab.fill("Webhook URL", receiver.url())
      const executionId = yield* tab.run()
      yield* tab.waitForStatus("completed")
      const first = yield* receiver.next
      expect(first).toMatchObject({ executionId, number: 1 })
      yield* tab.waitFor("[data-testid='webhook-delivery'][data-status='delivered']")

      yield* tab.click("Redeliver webhook")
      const second = yield* receiver.next
      expect(second).toMatchObject({ executionId, number: 2 })
      expect(JSON.parse(new TextDecoder().decode(second.rawBody)).data).toMatchObject({
        executionId,
        status: "completed"
      })
      yield* tab.waitUntil(
        "the delivery shows both attempts",
        () =>
          document.querySelectorAll("[data-testid='webhook-delivery'][data-status='delivered'] tbody tr").length === 2
      )
      yield* tab.screenshot("redelivered-webhook")
      expect(tab.errors).toEqual([])
    }), 60_000)

  it.scoped(
    "picks the webhook's events; every event's delivery is listed, and one is redelivered",
    () =>
      Effect.gen(function*() {
        const receiver = yield* TestReceiver.start()
        const tab = yield* ConsolePage.open()
        yield* tab.signIn()
        yield* tab.openApp("Greeting")
        yield* tab.fill("Who", "events")
        yield* tab.click("Webhook", "DisclosureTriangle")
        yield* tab.fill("Webhook URL", receiver.url())
        yield* tab.click("start when it starts running", "checkbox")
        // What the form sends is what the snippets show: the events beside the inputs.
        expect(yield* tab.textOf("[data-testid='curl-snippet']")).toContain(`"webhookEvents":["start","completed"]`)
        const executionId = yield* tab.run()
        yield* tab.waitForStatus("completed")
        const bodies = [yield* receiver.next, yield* receiver.next].map((r) => ({
          id: String(r.headers["webhook-id"]),
          type: JSON.parse(new TextDecoder().decode(r.rawBody)).type as string
        }))
        expect(bodies.map((b) => b.type).sort()).toEqual(["completed", "start"])
        yield* tab.waitUntil(
          "both events show delivered",
          () =>
            document.querySelectorAll("[data-testid='webhook-events'] tbody tr[data-status='delivered']").length === 2
        )
        const start = bodies.find((b) => b.type === "start")!
        yield* tab.click(`Redeliver start ${start.id.slice(-8)}`)
        const again = yield* receiver.next
        expect(again).toMatchObject({ executionId, number: 3 })
        expect(again.headers["webhook-id"]).toBe(start.id)
        expect(JSON.parse(new TextDecoder().decode(again.rawBody)).type).toBe("start")
        yield* tab.waitUntil(
          "the start event shows its two attempts",
          () =>
            document.querySelector(
              "[data-testid='webhook-events'] tr[data-event='start'][data-status='delivered'] td[data-label='Attempts']"
            )
              ?.textContent === "2"
        )
        yield* tab.screenshot("webhook-events")
        expect(tab.errors).toEqual([])
      }),
    60_000
  )

  it.scoped("shows an output that holds markup as text, never as HTML", () =>
    Effect.gen(function*() {
      const tab = yield* ConsolePage.open({ bypassCsp: true })
      yield* tab.signIn()
      yield* tab.runApp("Markup echo", { Text: MARKUP })
      yield* tab.waitForStatus("completed")
      yield* tab.waitForText(output("echo"), MARKUP)
      const page = yield* Effect.promise(() =>
        tab.page.evaluate(() => ({
          xss: (window as { __xss?: unknown }).__xss,
          images: document.querySelectorAll("main img").length,
          visible: document.querySelector<HTMLElement>("[data-output='echo'] .output-text")?.innerText
        }))
      )
      expect(page).toEqual({ xss: undefined, images: 0, visible: MARKUP })
      yield* tab.screenshot("markup-as-text")
      // The app's description, with its own markup, is text on the app's page too.
      yield* tab.click("Markup echo", "link")
      yield* tab.waitFor("[data-testid='workflow-diagram']")
      expect(yield* tab.textOf("main .description")).toContain(`<img src=y onerror="window.__xss=2">`)
      expect(yield* Effect.promise(() => tab.page.evaluate(() => (window as { __xss?: unknown }).__xss)))
        .toBeUndefined()
      expect(tab.errors).toEqual([])
    }), 60_000)
})
