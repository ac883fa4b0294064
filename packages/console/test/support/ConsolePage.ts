/**
 * A tab on the served console, as a person uses it: fields found by their label and buttons and
 * links by their name (puppeteer's ARIA queries, so a label that goes missing fails the test),
 * every wait on something the page shows, never on time. Each tab has its own browser context
 * (its own session storage), closed with the scope, and a 1280×800 viewport (`resize` makes it
 * a phone's, `PHONE`).
 *
 * `screenshot(name)` writes a full-page PNG of the view to `SCREENSHOTS` (default
 * `<tmpdir>/appexec-console-screenshots`, overwritten by each run), for a person to look at.
 */
import { Effect } from "effect"
import { mkdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { EvaluateFunc } from "puppeteer-core"
import { Chromium } from "./Chromium.js"
import { ServedConsole } from "./ServedConsole.js"

/** Where the tests' screenshots go: `APPEXEC_CONSOLE_SCREENSHOTS`, else a folder under the temp directory. */
export const SCREENSHOTS = process.env.APPEXEC_CONSOLE_SCREENSHOTS ?? join(tmpdir(), "appexec-console-screenshots")

/** A phone's screen, as the console is checked on it (an iPhone 14's, in CSS pixels). */
export const PHONE = { width: 390, height: 844 } as const

/** A desktop screen, as each tab starts. */
export const DESKTOP = { width: 1280, height: 800 } as const

/** How long one wait on the page may take before the test fails with what it waited for. */
const WAIT_MS = 30_000

/** An execution status as the console shows it on a run (`data-status` of its badge). */
export type Status = "queued" | "running" | "completed" | "failed"

/** A promise made an Effect whose failure says what the tab was doing. */
const step = <A>(what: string, run: () => Promise<A>): Effect.Effect<A, Error> =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => new Error(`${what}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
  })

/** An ARIA query for the element of `role` named `name`. */
const aria = (role: string, name: string) => `::-p-aria([name=${JSON.stringify(name)}][role=${JSON.stringify(role)}])`

/** Opens a tab in a fresh browser context; `bypassCsp` turns the page's Content-Security-Policy off. */
export const open = (options: { readonly bypassCsp?: boolean } = {}) =>
  Effect.gen(function*() {
    const browser = yield* yield* Chromium
    const served = yield* ServedConsole
    const context = yield* Effect.acquireRelease(
      step("opening a browser context", () => browser.createBrowserContext()),
      (context) => Effect.promise(() => context.close())
    )
    const page = yield* step("opening a tab", () => context.newPage())
    page.setDefaultTimeout(WAIT_MS)
    yield* step("sizing the tab", () => page.setViewport(DESKTOP))
    if (options.bypassCsp === true) yield* step("turning the CSP off", () => page.setBypassCSP(true))
    /** What the page threw and did not catch: a test expects none. */
    const errors: Array<string> = []
    page.on("pageerror", (error) => errors.push(error instanceof Error ? error.message : String(error)))

    /** Sizes the tab's screen (`PHONE`, `DESKTOP`); the page is laid out again at once. */
    const resize = (size: { readonly width: number; readonly height: number }) =>
      step(`sizing the tab to ${size.width}×${size.height}`, async () => {
        await page.setViewport({ ...size })
        // What the page redraws on a new size (the workflow's orientation) is drawn by the second frame.
        await page.evaluate(() =>
          new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve())))
        )
      })

    const goto = (path: string) =>
      step(`opening ${path}`, () => page.goto(`${served.baseUrl}/console${path}`, { waitUntil: "domcontentloaded" }))
        .pipe(Effect.asVoid)

    /** Waits until `selector` matches an element. */
    const waitFor = (selector: string) =>
      step(`waiting for ${selector}`, () => page.waitForSelector(selector)).pipe(Effect.asVoid)

    /** Waits until the element at `selector` shows `text` (its whole text content, trimmed). */
    const waitForText = (selector: string, text: string) =>
      step(`waiting for ${selector} to read ${JSON.stringify(text)}`, async () => {
        try {
          await page.waitForFunction(
            (s: string, t: string) => document.querySelector(s)?.textContent?.trim() === t,
            {},
            selector,
            text
          )
        } catch (error) {
          const shown = await page.$eval(selector, (element) => element.textContent?.trim()).catch(() => undefined)
          throw new Error(
            `${error instanceof Error ? error.message : String(error)}; it reads ${JSON.stringify(shown)}`
          )
        }
      })

    /** Waits until `predicate(...args)`, run in the page, holds; `what` names it in a failure. */
    const waitUntil = <Args extends Array<unknown>>(what: string, predicate: EvaluateFunc<Args>, ...args: Args) =>
      step(`waiting until ${what}`, () => page.waitForFunction(predicate, {}, ...args)).pipe(Effect.asVoid)

    /** The trimmed text content of the element at `selector`. */
    const textOf = (selector: string) =>
      step(`reading ${selector}`, () => page.$eval(selector, (element) => element.textContent?.trim() ?? ""))

    /** Types `value` into the field labelled `label` (a text box, or a search box), replacing what it held. */
    const fill = (label: string, value: string, role: "textbox" | "searchbox" = "textbox") =>
      step(`filling ${label}`, () => page.locator(aria(role, label)).fill(value))

    /** Chooses `value` in the select labelled `label`. */
    const choose = (label: string, value: string) =>
      step(`choosing ${value} in ${label}`, async () => {
        const select = await page.waitForSelector(aria("combobox", label))
        await select!.select(value)
      })

    /** Clicks the button (or link, …) named `name`. */
    const click = (name: string, role = "button") =>
      step(`clicking the ${role} ${name}`, () => page.locator(aria(role, name)).click())

    /** Waits for the run shown to have `status`. */
    const waitForStatus = (status: Status) => waitFor(`[data-testid="run-status"][data-status="${status}"]`)

    /** The id of the run shown once one other than `other` is: after "Run", the new run's page. */
    const shownRun = (other = "") =>
      step("waiting for a run's page", async () => {
        const view = await page.waitForSelector(
          `section.run-view[data-execution-id]:not([data-execution-id="${other}"])`
        )
        return view!.evaluate((element) => element.getAttribute("data-execution-id") ?? "")
      })

    /** Signs in with `key` as a person does: the field labelled "API key", then "Sign in". */
    const signIn = (key: string = served.key) =>
      Effect.gen(function*() {
        yield* goto("/")
        yield* fill("API key", key)
        yield* click("Sign in")
        yield* waitFor("nav[aria-label='Main']")
      })

    /** Opens the page of the app named `app` from the apps list, and waits for its form and workflow. */
    const openApp = (app: string) =>
      Effect.gen(function*() {
        yield* click("Apps", "link")
        yield* click(app, "link")
        yield* waitFor(`[data-testid="workflow-diagram"]`)
      })

    /** Presses the form's "Run" and waits for the new run's page (another than `from`): the new run's id. */
    const run = (from = "") => click("Run").pipe(Effect.zipRight(shownRun(from)))

    /**
     * Opens the app named `app`, fills its form (`fields` by label; `choices` for its selects) and
     * runs it: the new run's id.
     */
    const runApp = (
      app: string,
      fields: Readonly<Record<string, string>>,
      choices: Readonly<Record<string, string>> = {}
    ) =>
      Effect.gen(function*() {
        yield* openApp(app)
        for (const [label, value] of Object.entries(fields)) yield* fill(label, value)
        for (const [label, value] of Object.entries(choices)) yield* choose(label, value)
        return yield* run()
      })

    /** Writes a full-page PNG of the tab to `SCREENSHOTS/<name>.png`: its path. */
    const screenshot = (name: string) =>
      step(`taking the screenshot ${name}`, async () => {
        mkdirSync(SCREENSHOTS, { recursive: true })
        const path: `${string}.png` = `${join(SCREENSHOTS, name)}.png`
        await page.screenshot({ path, fullPage: true })
        return path
      })

    return {
      page,
      errors,
      goto,
      resize,
      waitFor,
      waitForText,
      waitUntil,
      textOf,
      fill,
      choose,
      click,
      waitForStatus,
      shownRun,
      signIn,
      openApp,
      run,
      runApp,
      screenshot
    }
  })

/** A tab as `open` makes it. */
export type Tab = Effect.Effect.Success<ReturnType<typeof open>>
