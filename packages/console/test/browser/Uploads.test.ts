/**
 * Uploads from the run form, in a real Chromium against the compiled `appexec serve`: a PNG
 * chosen in the page's file picker is uploaded (`POST /v1/uploads`) with a progress bar, shown
 * as a preview, and its URL becomes the input: Thumbnail runs on it and its thumbnail, downloaded
 * and decoded with sharp, is a 256×256 WebP. On a phone (390 pixels, touch) the picker takes
 * `image/*`, says nothing of dropping, and the chosen picture fits its form; the form is
 * photographed at 1280 and at 390 pixels. A file dropped on the zone is uploaded too; a PDF is
 * refused before it is sent and an SVG by the server (415), each said in words beside the field.
 * The picker opens by keyboard, and an upload under way can be canceled.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Chromium from "../support/Chromium.js"
import * as ConsolePage from "../support/ConsolePage.js"
import { decodeImageAt, dropFile, pngOf, type Tab, tempFile } from "../support/Media.js"
import { fitOf } from "../support/PageGeometry.js"
import * as ServedConsole from "../support/ServedConsole.js"

const served = Layer.merge(ServedConsole.layer, Chromium.layer)

/** The field of the parameter `image`. */
const field = "[data-parameter='image']"
const picker = `${field} input[type='file']`
const urlBox = `${field} input[type='url']`
const preview = `${field} [data-testid='upload-preview'] img`
const problem = `${field} [data-testid='upload-problem'] .field-problem`

/** Waits until the upload's preview shows the picture decoded, `width` pixels wide. */
const waitForPreview = (tab: Tab, width: number) =>
  tab.waitUntil(
    `the upload's preview is decoded, ${width} pixels wide`,
    (selector, width) => {
      const img = document.querySelector<HTMLImageElement>(selector)
      return img !== null && img.complete && img.naturalWidth === width
    },
    preview,
    width
  )

/** The value of the URL box. */
const urlValue = (tab: Tab) => Effect.promise(() => tab.page.$eval(urlBox, (box) => (box as HTMLInputElement).value))

layer(served, { timeout: "90 seconds", excludeTestServices: true })("uploads from the run form", (it) => {
  it.scoped(
    "a PNG chosen in the page is uploaded with its progress, previewed, and runs Thumbnail",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* ServedConsole.ServedConsole
        const png = yield* pngOf(1200, 800)
        const path = yield* tempFile("harbour.png", png)
        const tab = yield* ConsolePage.open()
        yield* tab.signIn()
        yield* tab.openApp("Thumbnail")
        // The picker takes what the parameter accepts: a phone offers its camera and gallery for it.
        expect(yield* Effect.promise(() => tab.page.$eval(picker, (input) => (input as HTMLInputElement).accept)))
          .toBe("image/*")

        // A slow line, so that the progress is there to be seen.
        const cdp = yield* Effect.promise(() => tab.page.createCDPSession())
        yield* Effect.promise(() =>
          cdp.send("Network.emulateNetworkConditions", {
            offline: false,
            latency: 20,
            downloadThroughput: -1,
            uploadThroughput: Math.ceil(png.byteLength / 2)
          })
        )
        const input = yield* Effect.promise(() => tab.page.$(picker))
        yield* Effect.promise(() => input!.uploadFile(path))
        yield* tab.waitUntil(
          "the progress bar shows part of the file sent",
          (selector) => {
            const bar = document.querySelector<HTMLProgressElement>(selector)
            return bar !== null && bar.value > 0 && bar.value < bar.max
          },
          `${field} [data-testid='upload-progress'] progress`
        )
        // The form waits for the upload.
        expect(
          yield* Effect.promise(() => tab.page.$eval("button[type='submit']", (b) => (b as HTMLButtonElement).disabled))
        )
          .toBe(true)
        yield* Effect.promise(() =>
          cdp.send("Network.emulateNetworkConditions", {
            offline: false,
            latency: 0,
            downloadThroughput: -1,
            uploadThroughput: -1
          })
        )
        yield* waitForPreview(tab, 1200)
        const url = yield* urlValue(tab)
        expect(url.startsWith(`${baseUrl}/media/uploads/`)).toBe(true)
        expect(yield* tab.textOf(`${field} [data-testid='upload-preview'] figcaption .upload-name`)).toBe("harbour.png")
        yield* tab.screenshot("upload-chosen")

        yield* tab.run()
        yield* tab.waitForStatus("completed")
        const thumbnail = "[data-output='thumbnail'] img.output-image"
        yield* tab.waitFor(thumbnail)
        const src = yield* Effect.promise(() => tab.page.$eval(thumbnail, (img) => (img as HTMLImageElement).src))
        expect(yield* decodeImageAt(src)).toEqual({ format: "webp", width: 256, height: 256 })
        expect(tab.errors).toEqual([])
      }),
    90_000
  )

  it.scoped(
    "on a phone the picker takes image/*, says nothing of dropping, and the chosen picture fits its form",
    () =>
      Effect.gen(function*() {
        const path = yield* tempFile("harbour.png", yield* pngOf(1200, 800))
        const tab = yield* ConsolePage.open()
        // Touch, 390 pixels wide (a change of `isMobile` reloads the tab: it is made before anything is open).
        yield* Effect.promise(() =>
          tab.page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true, deviceScaleFactor: 1 })
        )
        yield* tab.signIn()
        yield* tab.openApp("Thumbnail")
        expect(yield* Effect.promise(() => tab.page.$eval(picker, (input) => (input as HTMLInputElement).accept)))
          .toBe("image/*")
        // Nothing says to drop a file on a touch screen.
        expect(
          yield* Effect.promise(() =>
            tab.page.$eval(`${field} .drop-hint`, (hint) => (hint as HTMLElement).offsetParent === null)
          )
        ).toBe(true)
        const input = yield* Effect.promise(() => tab.page.$(picker))
        yield* Effect.promise(() => input!.uploadFile(path))
        yield* waitForPreview(tab, 1200)
        const narrow = yield* Effect.promise(() =>
          tab.page.$eval("[data-testid='run-form']", (form) => {
            const right = (selector: string) => form.querySelector(selector)!.getBoundingClientRect().right
            return {
              form: form.getBoundingClientRect().right,
              url: right("input[type='url']"),
              pick: right(".pick"),
              preview: right("[data-testid='upload-preview'] img"),
              remove: right("[data-testid='upload-preview'] button"),
              overflow: form.querySelector(".url-field")!.scrollWidth - form.querySelector(".url-field")!.clientWidth
            }
          })
        )
        for (const part of [narrow.url, narrow.pick, narrow.preview, narrow.remove]) {
          expect(part).toBeLessThanOrEqual(narrow.form)
        }
        // Nothing of the field is wider than the field: it sets no width of its own on the page.
        expect(narrow.overflow).toBe(0)
        // And the page with its preview is no wider than the phone's screen.
        const fit = yield* Effect.promise(() => fitOf(tab.page))
        expect(fit.scrollWidth).toBeLessThanOrEqual(390)
        expect(fit.overflowing).toEqual([])
        yield* tab.screenshot("upload-chosen-phone")
        expect(tab.errors).toEqual([])
      }),
    60_000
  )

  it.scoped(
    "a dropped file is uploaded; a PDF and an SVG are refused, each in words beside the field",
    () =>
      Effect.gen(function*() {
        const tab = yield* ConsolePage.open()
        yield* tab.signIn()
        yield* tab.openApp("Caption")

        yield* dropFile(tab, "image", "notes.pdf", "application/pdf", new TextEncoder().encode("%PDF-1.4\n"))
        yield* tab.waitForText(problem, "This input takes images; notes.pdf is application/pdf.")

        const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>`
        yield* dropFile(tab, "image", "drawing.svg", "image/svg+xml", new TextEncoder().encode(svg))
        yield* tab.waitForText(
          problem,
          "The server does not take image/svg+xml files, so drawing.svg was not uploaded."
        )
        // The server's own words come beside, naming what it takes.
        expect(yield* tab.textOf(`${field} [data-testid='upload-problem'] .help`)).toContain("image/png")
        expect(yield* urlValue(tab)).toBe("")
        yield* tab.screenshot("upload-refused")

        yield* dropFile(tab, "image", "dusk.png", "image/png", yield* pngOf(300, 200))
        yield* waitForPreview(tab, 300)
        expect(yield* Effect.promise(() => tab.page.$(problem))).toBeNull()
        expect((yield* urlValue(tab)).includes("/media/uploads/")).toBe(true)

        // "Remove" empties the input and gives the focus back to the picker.
        yield* tab.click("Remove")
        expect(yield* urlValue(tab)).toBe("")
        expect(yield* Effect.promise(() => tab.page.evaluate(() => (document.activeElement as HTMLInputElement).type)))
          .toBe("file")
        expect(tab.errors).toEqual([])
      }),
    60_000
  )

  it.scoped("the picker opens by keyboard, and an upload under way can be canceled", () =>
    Effect.gen(function*() {
      const png = yield* pngOf(640, 480)
      const path = yield* tempFile("pier.png", png)
      const tab = yield* ConsolePage.open()
      yield* tab.signIn()
      yield* tab.openApp("Thumbnail")
      yield* Effect.promise(() => tab.page.focus(urlBox))
      yield* Effect.promise(() => tab.page.keyboard.press("Tab"))
      expect(yield* Effect.promise(() => tab.page.evaluate(() => (document.activeElement as HTMLInputElement).type)))
        .toBe("file")

      // Canceled on a slow line: nothing becomes the input.
      const cdp = yield* Effect.promise(() => tab.page.createCDPSession())
      yield* Effect.promise(() =>
        cdp.send("Network.emulateNetworkConditions", {
          offline: false,
          latency: 20,
          downloadThroughput: -1,
          uploadThroughput: Math.ceil(png.byteLength / 10)
        })
      )
      const [first] = yield* Effect.promise(() =>
        Promise.all([tab.page.waitForFileChooser(), tab.page.keyboard.press("Space")])
      )
      yield* Effect.promise(() => first.accept([path]))
      yield* tab.waitFor(`${field} [data-testid='upload-progress']`)
      yield* tab.click("Cancel upload")
      yield* tab.waitUntil("the upload is gone", (selector) =>
        document.querySelector(selector) === null, `${field} [data-testid='upload-progress']`)
      expect(yield* urlValue(tab)).toBe("")
      expect(
        yield* Effect.promise(() =>
          tab.page.$eval("button[type='submit']", (b) =>
            (b as HTMLButtonElement).disabled)
        )
      )
        .toBe(false)

      yield* Effect.promise(() =>
        cdp.send("Network.emulateNetworkConditions", {
          offline: false,
          latency: 0,
          downloadThroughput: -1,
          uploadThroughput: -1
        })
      )
      yield* Effect.promise(() => tab.page.focus(picker))
      const [second] = yield* Effect.promise(() =>
        Promise.all([tab.page.waitForFileChooser(), tab.page.keyboard.press("Enter")])
      )
      yield* Effect.promise(() => second.accept([path]))
      yield* waitForPreview(tab, 640)
      expect((yield* urlValue(tab)).includes("/media/uploads/")).toBe(true)
      expect(tab.errors).toEqual([])
    }), 60_000)
})
