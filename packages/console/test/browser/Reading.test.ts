/**
 * Runs that read right, in a real Chromium against the compiled `appexec serve`: a completed Ken
 * Burns run (whose video node may last report 98% and then finish) shows every node done at 100%,
 * never "stopped", and its first frame decodes in the page; a run of a 99,999-character input shows the
 * input and the output folded after about twenty lines with "Show all", which unfolds them and
 * "Show less" folds them again. Each is shown at 1280 pixels and on a phone, where it fits.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Chromium from "../support/Chromium.js"
import * as ConsolePage from "../support/ConsolePage.js"
import { fitOf } from "../support/PageGeometry.js"
import * as ServedConsole from "../support/ServedConsole.js"

const served = Layer.merge(ServedConsole.layer, Chromium.layer)

/** How long a Ken Burns run may take on a busy machine (ffmpeg encodes 125 frames of 1280×720). */
const VIDEO_MS = 80_000

/** A text of `length` characters in words, as a long paste is. */
const longText = (length: number) =>
  "All work and no play makes a very long input. ".repeat(length / 40).slice(0, length)

/** The page's height. */
const heightOf = (page: ConsolePage.Tab["page"]): Promise<number> =>
  page.evaluate(() => document.documentElement.scrollHeight)

layer(served, { timeout: "120 seconds", excludeTestServices: true })("runs that read right", (it) => {
  it.scoped(
    "shows a completed Ken Burns run's progress done at 100%, never stopped, and its first frame",
    () =>
      Effect.gen(function*() {
        const tab = yield* ConsolePage.open()
        yield* tab.signIn()
        yield* tab.openApp("Ken Burns")
        yield* tab.run()
        yield* tab.waitFor("[data-node='zoom'] progress")
        yield* Effect.promise(() =>
          tab.page.waitForSelector("[data-testid='run-status'][data-status='completed']", { timeout: VIDEO_MS })
        )
        const bars = yield* Effect.promise(() =>
          tab.page.$$eval(".progress-list li", (items) =>
            items.map((item) => ({
              node: item.getAttribute("data-node"),
              stopped: item.getAttribute("data-stopped"),
              percent: item.querySelector(".percent")?.textContent,
              value: item.querySelector("progress")?.value,
              note: item.querySelector(".help")?.textContent
            })))
        )
        expect(bars.map((bar) => bar.node)).toContain("zoom")
        for (const bar of bars) {
          expect(bar).toEqual({ node: bar.node, stopped: "false", percent: "100%", value: 1, note: "Done" })
        }
        expect(yield* tab.textOf("main")).not.toContain("Stopped")
        yield* tab.waitUntil("the first frame is decoded", () => {
          const image = document.querySelector<HTMLImageElement>("[data-output='poster'] img")
          return image !== null && image.complete && image.naturalWidth === 1280
        })
        // A short input is shown whole, with nothing to unfold.
        expect(yield* Effect.promise(() => tab.page.$$("[data-testid='run-inputs'] .unfold"))).toHaveLength(0)
        yield* tab.screenshot("run-ken-burns")
        yield* tab.resize(ConsolePage.PHONE)
        const fit = yield* Effect.promise(() => fitOf(tab.page))
        expect(fit.overflowing).toEqual([])
        expect(fit.scrollWidth).toBeLessThanOrEqual(ConsolePage.PHONE.width)
        yield* tab.screenshot("run-ken-burns-phone")
        expect(tab.errors).toEqual([])
      }),
    120_000
  )

  it.scoped(
    "folds a 99,999-character input and its output after about twenty lines, with Show all",
    () =>
      Effect.gen(function*() {
        const { baseUrl, key } = yield* ServedConsole.ServedConsole
        const text = longText(99_999)
        const executionId = yield* Effect.promise(async () => {
          const headers = { "x-api-key": key, "content-type": "application/json" }
          const apps: { data: ReadonlyArray<{ appId: string; name: string }> } = await fetch(`${baseUrl}/v1/apps`, {
            headers
          }).then((r) => r.json())
          const appId = apps.data.find((app) => app.name === "Markup echo")!.appId
          const started: { data: { executionId: string } } = await fetch(`${baseUrl}/v1/apps/${appId}/executions`, {
            method: "POST",
            headers,
            body: JSON.stringify({ inputs: { text } })
          }).then((r) => r.json())
          return started.data.executionId
        })
        const tab = yield* ConsolePage.open()
        yield* tab.signIn()
        yield* tab.goto(`/runs/${executionId}`)
        yield* tab.waitForStatus("completed")
        yield* tab.waitFor("[data-output='echo'] .unfold button")
        yield* tab.waitFor("[data-input='text'] .unfold button")
        // Both whole in the page, each folded to about twenty lines.
        expect(yield* tab.textOf("[data-output='echo'] pre")).toBe(text)
        const folded = yield* Effect.promise(() =>
          tab.page.$$eval(".long-text pre", (blocks) =>
            blocks.map((block) => {
              const lines = block.clientHeight / parseFloat(getComputedStyle(block).lineHeight)
              return { lines: Math.round(lines), cut: block.scrollHeight > block.clientHeight }
            }))
        )
        expect(folded).toHaveLength(2)
        for (const block of folded) {
          expect(block.cut).toBe(true)
          expect(block.lines).toBeGreaterThanOrEqual(18)
          expect(block.lines).toBeLessThanOrEqual(22)
        }
        const before = yield* Effect.promise(() => heightOf(tab.page))
        expect(before).toBeLessThan(3_000)
        expect(yield* tab.textOf("[data-input='text'] .unfold button")).toBe("Show all")
        expect(yield* tab.textOf("[data-input='text'] .unfold .help")).toBe("99,999 characters")
        yield* tab.screenshot("run-long-input")

        const unfold = "[data-input='text'] .unfold button"
        yield* Effect.promise(() => tab.page.click(unfold))
        yield* tab.waitFor("[data-input='text'] .long-text[data-open='true']")
        expect(yield* tab.textOf(unfold)).toBe("Show less")
        const unfolded = yield* Effect.promise(() => heightOf(tab.page))
        expect(unfolded).toBeGreaterThan(before + 5_000)
        yield* Effect.promise(() => tab.page.click(unfold))
        yield* tab.waitFor("[data-input='text'] .long-text[data-open='false']")
        expect(yield* Effect.promise(() => heightOf(tab.page))).toBeLessThanOrEqual(before + 1)

        yield* tab.resize(ConsolePage.PHONE)
        const fit = yield* Effect.promise(() => fitOf(tab.page))
        expect(fit.overflowing).toEqual([])
        expect(yield* Effect.promise(() => heightOf(tab.page))).toBeLessThan(5_000)
        yield* tab.screenshot("run-long-input-phone")
        expect(tab.errors).toEqual([])
      }),
    60_000
  )
})
