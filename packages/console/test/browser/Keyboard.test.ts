/**
 * The run form and the keyboard, in a real Chromium against the compiled `appexec serve`, typed
 * as a person types (clicks, keys, Tab; never a value set by script): Enter runs the form from a
 * single-line box and sends exactly what was typed, no line break; in a multi-line box Enter adds
 * a line and Ctrl+Enter runs the form; typing into a box that holds its default (Ken Burns's
 * prompt), entered by a click or by Tab, replaces the default; an example (Poster's prompt) is
 * the empty box's placeholder, never its value. What was sent is read back from the API.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Chromium from "../support/Chromium.js"
import * as ConsolePage from "../support/ConsolePage.js"
import { pngOf, readApi, type Tab, uploadOf } from "../support/Media.js"
import * as ServedConsole from "../support/ServedConsole.js"

const served = Layer.merge(ServedConsole.layer, Chromium.layer)

/** The box of the parameter `name` on the app's page. */
const box = (name: string) => `[data-testid='run-form'] [name='${name}']`

/** What a box is and holds: its tag, type, value, placeholder and whether it has the focus. */
const boxState = (tab: Tab, name: string) =>
  Effect.promise(() =>
    tab.page.$eval(box(name), (element) => {
      const field = element as HTMLInputElement | HTMLTextAreaElement
      return {
        tag: field.tagName.toLowerCase(),
        type: field instanceof HTMLInputElement ? field.type : "textarea",
        value: field.value,
        placeholder: field.placeholder,
        focused: document.activeElement === field
      }
    })
  )

layer(served, { timeout: "90 seconds", excludeTestServices: true })("the run form and the keyboard", (it) => {
  it.scoped(
    "Enter runs the form from a single-line box, and sends what was typed with no line break",
    () =>
      Effect.gen(function*() {
        const { baseUrl, key } = yield* ServedConsole.ServedConsole
        const tab = yield* ConsolePage.open()
        yield* tab.signIn()
        yield* tab.openApp("Greeting")
        expect(yield* boxState(tab, "who")).toMatchObject({ tag: "input", type: "text", value: "", placeholder: "Ada" })
        yield* Effect.promise(() => tab.page.click(box("who")))
        yield* Effect.promise(() => tab.page.keyboard.type("Keyboard Kim"))
        yield* Effect.promise(() => tab.page.keyboard.press("Enter"))
        const executionId = yield* tab.shownRun()
        yield* tab.waitForStatus("completed")
        yield* tab.waitForText("[data-output='greeting'] .output-text", "Hello Keyboard Kim, in a warm tone.")
        const execution = yield* readApi(baseUrl, key, `/v1/executions/${executionId}`)
        expect(execution.inputs).toEqual({ who: "Keyboard Kim", tone: "warm" })
        expect(tab.errors).toEqual([])
      }),
    60_000
  )

  it.scoped("in a multi-line box Enter adds a line and Ctrl+Enter runs the form", () =>
    Effect.gen(function*() {
      const { baseUrl, key } = yield* ServedConsole.ServedConsole
      const picture = yield* uploadOf(baseUrl, key, yield* pngOf(320, 200), "image/png")
      const tab = yield* ConsolePage.open()
      yield* tab.signIn()
      yield* tab.openApp("Caption")
      yield* tab.fill("Image", picture.url)
      expect(yield* boxState(tab, "text")).toMatchObject({ tag: "textarea", placeholder: "Low tide at the harbour" })
      // The box says which keys run the form.
      expect(yield* tab.textOf("[data-parameter='text'] .keys-hint")).toBe("Enter adds a line; Ctrl+Enter runs.")
      yield* Effect.promise(() => tab.page.click(box("text")))
      yield* Effect.promise(() => tab.page.keyboard.type("Low tide"))
      yield* Effect.promise(() => tab.page.keyboard.press("Enter"))
      yield* Effect.promise(() => tab.page.keyboard.type("at the harbour"))
      expect((yield* boxState(tab, "text")).value).toBe("Low tide\nat the harbour")
      // Enter started nothing: the form is still there, and no run.
      expect(yield* Effect.promise(() => tab.page.$("section.run-view"))).toBeNull()
      yield* tab.screenshot("keyboard-multiline")
      yield* Effect.promise(async () => {
        await tab.page.keyboard.down("Control")
        await tab.page.keyboard.press("Enter")
        await tab.page.keyboard.up("Control")
      })
      const executionId = yield* tab.shownRun()
      yield* tab.waitForStatus("completed")
      const execution = yield* readApi(baseUrl, key, `/v1/executions/${executionId}`)
      expect(execution.inputs).toEqual({ image: picture.url, text: "Low tide\nat the harbour" })
      expect(tab.errors).toEqual([])
    }), 60_000)

  it.scoped(
    "typing into a box that holds its default replaces it, entered by a click or by Tab",
    () =>
      Effect.gen(function*() {
        const { baseUrl, key } = yield* ServedConsole.ServedConsole
        const tab = yield* ConsolePage.open()
        yield* tab.signIn()
        yield* tab.openApp("Ken Burns")
        expect(yield* boxState(tab, "prompt")).toMatchObject({ tag: "input", value: "A lighthouse at dusk" })
        yield* Effect.promise(() => tab.page.click(box("prompt")))
        yield* Effect.promise(() => tab.page.keyboard.type("a harbour at dawn"))
        expect((yield* boxState(tab, "prompt")).value).toBe("a harbour at dawn")
        // Once it holds what was typed, a click places the caret as usual: typing adds to it.
        yield* Effect.promise(() => tab.page.click(box("image")))
        yield* Effect.promise(() => tab.page.click(box("prompt")))
        yield* Effect.promise(() => tab.page.keyboard.press("End"))
        yield* Effect.promise(() => tab.page.keyboard.type(", in fog"))
        expect((yield* boxState(tab, "prompt")).value).toBe("a harbour at dawn, in fog")

        // By keyboard, on a fresh form: from the image's URL box, past its file picker, to the prompt.
        yield* tab.goto("/apps")
        yield* tab.openApp("Ken Burns")
        yield* Effect.promise(() => tab.page.focus(box("image")))
        yield* Effect.promise(() => tab.page.keyboard.press("Tab"))
        yield* Effect.promise(() => tab.page.keyboard.press("Tab"))
        expect(yield* boxState(tab, "prompt")).toMatchObject({ value: "A lighthouse at dusk", focused: true })
        yield* Effect.promise(() => tab.page.keyboard.type("a harbour at dawn"))
        expect((yield* boxState(tab, "prompt")).value).toBe("a harbour at dawn")
        yield* Effect.promise(() => tab.page.keyboard.press("Enter"))
        const executionId = yield* tab.shownRun()
        const execution = yield* readApi(baseUrl, key, `/v1/executions/${executionId}`)
        expect(execution.inputs).toEqual({ prompt: "a harbour at dawn" })
        // The video is not needed here: the run is canceled.
        yield* tab.click("Cancel")
        yield* tab.waitForStatus("failed")
        expect(tab.errors).toEqual([])
      }),
    60_000
  )

  it.scoped("an example is the empty box's placeholder, never its value", () =>
    Effect.gen(function*() {
      const tab = yield* ConsolePage.open()
      yield* tab.signIn()
      yield* tab.openApp("Poster")
      expect(yield* boxState(tab, "prompt")).toMatchObject({
        tag: "input",
        value: "",
        placeholder: "A lighthouse at dusk"
      })
      yield* Effect.promise(() => tab.page.click(box("prompt")))
      yield* Effect.promise(() => tab.page.keyboard.type("Neon nights"))
      expect((yield* boxState(tab, "prompt")).value).toBe("Neon nights")
      expect(yield* tab.textOf("[data-testid='curl-snippet']")).toContain(`"prompt":"Neon nights"`)
      expect(tab.errors).toEqual([])
    }), 60_000)
})
