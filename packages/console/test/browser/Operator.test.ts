/**
 * The operator views on the admin port, in a real Chromium against the compiled `appexec serve
 * --admin-port 0` (each test its own server and data directory): no sign-in, the queues, the last
 * hour's charts, a configured ComfyUI server that does not answer (unreachable, since when), and the failed
 * deliveries of a run whose webhook a real receiver refused.
 * Read-only by default: no "Redeliver" button, and the endpoint refuses with 403 saying how to
 * allow it. With `--admin-actions`: a page of another site the operator visits (a second local
 * server) posts a form from a sandboxed frame and fetches, and nothing is sent (the attempts stay
 * as they were); then the page's own "Redeliver" sends the webhook again to the receiver, which
 * takes it, and the delivery leaves the list. On a phone's screen (390×844) the views fit, their
 * tables stacked rows and their charts' labels 11 pixels or more. With a worker that does not run
 * a node type Greeting needs (`--node-types`), its runs are listed under Apps, queued, waiting for
 * a worker for it, and the process shows which node types its worker runs; the console's page of
 * such a run says so too.
 */
import { TestReceiver } from "@appexec/testing"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as ComfyServer from "../../../nodes-comfyui/test/support/ComfyServer.js"
import { startServe, tempDataDir } from "../../../server/test/support/ServeProcess.js"
import * as Chromium from "../support/Chromium.js"
import * as ConsolePage from "../support/ConsolePage.js"
import * as ForeignSite from "../support/ForeignSite.js"
import { fitOf } from "../support/PageGeometry.js"
import { ServedConsole } from "../support/ServedConsole.js"

/**
 * `appexec serve` on a temp data directory with the admin port and `extra` flags: the process,
 * the admin port's URL, a call of its API with its key, and the id of the example app Greeting.
 */
const serveWithAdmin = (extra: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const serve = yield* startServe(yield* tempDataDir, ["--admin-port", "0", ...extra])
    const [, adminUrl] = yield* serve.waitFor(/Operator views: (http:\/\/127\.0\.0\.1:\d+)\/console/, "stderr")
    const api = (path: string, init: RequestInit = {}) =>
      Effect.promise(async () => {
        const response = await fetch(`${serve.baseUrl}${path}`, {
          ...init,
          headers: { "x-api-key": serve.key, "content-type": "application/json" }
        })
        return (await response.json()) as { readonly data: never }
      })
    const apps: ReadonlyArray<{ readonly appId: string; readonly name: string }> = (yield* api("/v1/apps")).data
    const greeting = apps.find((app) => app.name === "Greeting")!.appId
    return { serve, adminUrl: adminUrl!, api, greeting }
  })

/** A tab on the operator views at the bare address of the admin port (no sign-in). */
const openViews = (serve: { readonly baseUrl: string; readonly key: string }, adminUrl: string) =>
  Effect.gen(function*() {
    const tab = yield* ConsolePage.open().pipe(
      Effect.provideService(ServedConsole, { baseUrl: serve.baseUrl, key: serve.key, cli: () => Effect.succeed("") })
    )
    yield* Effect.promise(() => tab.page.goto(`${adminUrl}/`, { waitUntil: "domcontentloaded" }))
    return tab
  })

/**
 * `appexec serve` with the admin port and `extra` flags, a run of Greeting whose webhook the
 * receiver refused twice (the first attempt and its one retry) so that its delivery failed for
 * good, and a tab on the operator views. The receiver takes every later request.
 */
const operatorViews = (extra: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const receiver = yield* TestReceiver.start((request) => (request.number <= 2 ? 500 : 204))
    const { adminUrl, api, greeting, serve } = yield* serveWithAdmin([
      "--allow-private-networks",
      "--webhook-retry-delays",
      "10ms",
      ...extra
    ])
    const started: { readonly executionId: string } = (yield* api(
      `/v1/apps/${greeting}/executions?webhook=${encodeURIComponent(receiver.url())}`,
      { method: "POST", body: JSON.stringify({ inputs: { who: "an operator" } }) }
    )).data
    yield* receiver.next
    yield* receiver.next

    const tab = yield* openViews(serve, adminUrl)
    // No sign-in: the bare address of the admin port leads to the views.
    yield* tab.waitFor("[data-testid='chart-throughput']")
    yield* tab.waitFor(`[data-testid='deliveries-table'] tr[data-execution-id='${started.executionId}']`)
    return { tab, receiver, adminUrl, executionId: started.executionId }
  })

/**
 * The operator views on a phone: nothing wider than the screen, and the failed delivery of
 * `executionId` a stacked row whose URL and attempts are in view. The tab is left at that size.
 */
const fitsPhone = (tab: ConsolePage.Tab, executionId: string, shot: string) =>
  Effect.gen(function*() {
    yield* tab.resize(ConsolePage.PHONE)
    const fit = yield* Effect.promise(() => fitOf(tab.page))
    expect(fit.overflowing).toEqual([])
    expect(fit.scrollWidth).toBeLessThanOrEqual(ConsolePage.PHONE.width)
    const cells = yield* Effect.promise(() =>
      tab.page.$$eval(`tr[data-execution-id='${executionId}'] td`, (tds) =>
        tds.map((td) => ({ label: td.getAttribute("data-label"), right: td.getBoundingClientRect().right })))
    )
    expect(
      cells.map((cell) =>
        cell.label
      ).slice(0, 5)
    ).toEqual(["Run", "Workspace", "URL", "Last attempt", "Attempts"])
    for (const cell of cells) expect(cell.right).toBeLessThanOrEqual(ConsolePage.PHONE.width)
    // The charts are drawn at the width shown: their axis labels are not shrunk.
    const smallest = yield* Effect.promise(() =>
      tab.page.$$eval(".chart text", (texts) =>
        Math.min(
          ...texts.map((text) =>
            parseFloat(getComputedStyle(text).fontSize) * ((text as SVGTextElement).getScreenCTM()?.a ?? 1)
          )
        ))
    )
    expect(smallest).toBeGreaterThanOrEqual(11)
    yield* tab.screenshot(shot)
  })

layer(Chromium.layer, { timeout: "90 seconds", excludeTestServices: true })("the operator views", (it) => {
  it.scoped(
    "are read-only by default: the failed delivery is shown with no Redeliver, and the endpoint refuses",
    () =>
      Effect.gen(function*() {
        // A ComfyUI server configured but stopped: shown among the backend servers, unreachable.
        const comfyui = yield* ComfyServer.make()
        yield* Effect.promise(() => comfyui.close())
        const { adminUrl, executionId, receiver, tab } = yield* operatorViews(["--comfyui", comfyui.url])
        expect(tab.page.url()).toBe(`${adminUrl}/console`)
        const backend = `[data-testid='backends-table'] tr[data-backend='${comfyui.url}']`
        yield* tab.waitFor(`${backend}[data-state='unreachable']`)
        expect(yield* tab.textOf(`${backend} [data-testid='backend-executions']`)).toBe("—")
        // The look marked it down in the pool: since when is shown.
        yield* tab.waitFor(`${backend} [data-testid='backend-since']`)
        expect(yield* tab.textOf(`${backend} [data-testid='backend-since']`)).toMatch(/^since /)
        yield* tab.waitForText("[data-testid='operator-mode']", "Read-only")
        yield* tab.waitForText("[data-testid='completed-total']", "1")
        expect(yield* tab.textOf("[data-testid='failure-rate']")).toBe("0%")
        // The one process, idle: serve itself, live.
        const process = "[data-testid='processes-table'] tr[data-live='true']"
        yield* tab.waitFor(process)
        expect(yield* tab.textOf(`${process} [data-testid='role']`)).toBe("serve")
        expect(yield* tab.textOf(`${process} [data-testid='process-running']`)).toBe("0")
        const row = `[data-testid='deliveries-table'] tr[data-execution-id='${executionId}']`
        expect(yield* tab.textOf(`${row} td:nth-child(2)`)).toBe("default")
        expect(yield* tab.textOf(`${row} td:nth-child(3)`)).toBe(receiver.url())
        expect(yield* tab.textOf(`${row} td:nth-child(5)`)).toBe("2")
        expect(
          yield* Effect.promise(() =>
            tab.page.evaluate(() => [...document.querySelectorAll("button")].some((b) => b.textContent === "Redeliver"))
          )
        ).toBe(false)
        // The page's own origin may call the endpoint, which refuses and says why.
        const refused = yield* Effect.promise(() =>
          tab.page.evaluate(async (id: string) => {
            const response = await fetch(`/operator/executions/${id}/webhook/redeliver`, { method: "POST" })
            return { status: response.status, body: await response.json() as unknown }
          }, executionId)
        )
        expect(refused).toMatchObject({ status: 403, body: { error: { code: "forbidden" } } })
        expect(JSON.stringify(refused.body)).toContain("--admin-actions")
        expect(receiver.received).toHaveLength(2)
        yield* tab.screenshot("operator-read-only")
        yield* fitsPhone(tab, executionId, "operator-read-only-phone")
        expect(tab.errors).toEqual([])
      }),
    90_000
  )

  it.scoped(
    "show each app's queue with what it waits for, and what each process's worker runs, on a desktop and a phone",
    () =>
      Effect.gen(function*() {
        // serve's worker runs inputs, outputs and utilities only: Greeting needs text.template.
        const { adminUrl, api, greeting, serve } = yield* serveWithAdmin(["--node-types", "input.*,output.*,util.*"])
        const started: Array<string> = []
        for (const who of ["Ada", "Grace"]) {
          const answer: { readonly executionId: string } = (yield* api(`/v1/apps/${greeting}/executions`, {
            method: "POST",
            body: JSON.stringify({ inputs: { who } })
          })).data
          started.push(answer.executionId)
        }

        const tab = yield* openViews(serve, adminUrl)
        const row = "[data-testid='apps-table'] tr[data-app='Greeting']"
        yield* tab.waitForText(`${row} [data-testid='app-waiting']`, "a worker for text.template")
        expect(yield* tab.textOf(`${row} [data-testid='app-queued']`)).toBe("2")
        expect(yield* tab.textOf(`${row} [data-testid='app-running']`)).toBe("0")
        expect(yield* tab.textOf(`${row} [data-testid='app-limit']`)).toBe("—")
        // serve's own row: the types its patterns matched, by family, the whole list in the title.
        const types = "[data-testid='processes-table'] tr[data-live='true'] [data-testid='node-types'] span"
        yield* tab.waitFor(types)
        const shown = yield* Effect.promise(() =>
          tab.page.$eval(types, (span) => ({ text: span.textContent, title: span.getAttribute("title") }))
        )
        expect(shown.text).toMatch(/^\d+ types: input ×\d+, output ×\d+, util ×\d+$/)
        expect(shown.title?.split(", ")).toEqual(expect.arrayContaining(["input.text", "output.text", "util.delay"]))
        expect(shown.title).not.toContain("text.template")
        yield* tab.screenshot("operator-apps")

        yield* tab.resize(ConsolePage.PHONE)
        const fit = yield* Effect.promise(() => fitOf(tab.page))
        expect(fit.overflowing).toEqual([])
        expect(fit.scrollWidth).toBeLessThanOrEqual(ConsolePage.PHONE.width)
        const cells = yield* Effect.promise(() =>
          tab.page.$$eval(
            `${row} td, [data-testid='processes-table'] td`,
            (tds) =>
              tds.map((td) => ({ label: td.getAttribute("data-label"), right: td.getBoundingClientRect().right }))
          )
        )
        expect(cells.map((cell) => cell.label)).toEqual(
          expect.arrayContaining(["App", "Queued", "Running", "Limit", "Waiting for", "Node types"])
        )
        for (const cell of cells) expect(cell.right).toBeLessThanOrEqual(ConsolePage.PHONE.width)
        yield* tab.screenshot("operator-apps-phone")
        expect(tab.errors).toEqual([])

        // The console's page of one of the runs says what it waits for, beside its queue position.
        const console = yield* ConsolePage.open().pipe(
          Effect.provideService(ServedConsole, {
            baseUrl: serve.baseUrl,
            key: serve.key,
            cli: () => Effect.succeed("")
          })
        )
        yield* console.signIn()
        yield* console.goto(`/runs/${started[1]}`)
        yield* console.waitForText("[data-testid='run-waiting']", "a worker for text.template")
        expect(yield* console.textOf("[data-testid='queue-position']")).toBe("1 ahead in its workspace")
        yield* console.screenshot("run-waiting")
        expect(console.errors).toEqual([])
      }),
    90_000
  )

  it.scoped(
    "with --admin-actions, another site's form and fetches change nothing; Redeliver sends the webhook again",
    () =>
      Effect.gen(function*() {
        const { adminUrl, executionId, receiver, tab } = yield* operatorViews(["--admin-actions"])
        yield* tab.waitForText("[data-testid='operator-mode']", "Actions allowed")
        yield* tab.screenshot("operator-actions")
        yield* fitsPhone(tab, executionId, "operator-actions-phone")
        yield* tab.resize(ConsolePage.DESKTOP)

        const attempts = Effect.promise(async () => {
          const response = await fetch(`${adminUrl}/operator/deliveries`)
          const { data } = (await response.json()) as {
            readonly data: ReadonlyArray<{ readonly executionId: string; readonly attempts: ReadonlyArray<unknown> }>
          }
          return data.find((d) => d.executionId === executionId)?.attempts.length
        })
        expect(yield* attempts).toBe(2)

        // The operator visits another site in another tab of the same browser.
        const site = yield* ForeignSite.serve(
          `${adminUrl}/operator/executions/${executionId}/webhook/redeliver`,
          `${adminUrl}/operator`
        )
        const foreign = yield* Effect.promise(() => tab.page.browserContext().newPage())
        const answered: Array<{ readonly method: string; readonly status: number }> = []
        foreign.on("response", (response) => {
          if (response.url().endsWith("/webhook/redeliver")) {
            answered.push({ method: response.request().method(), status: response.status() })
          }
        })
        yield* Effect.promise(() => foreign.goto(site, { waitUntil: "domcontentloaded" }))
        yield* Effect.promise(() => foreign.waitForFunction(() => "attack" in window))
        const attack = yield* Effect.promise(() =>
          foreign.evaluate(() => (window as unknown as { readonly attack: ForeignSite.Attack }).attack)
        )
        // The form was posted and answered, the no-cors fetch sent and answered (unreadable), the
        // fetch with the header stopped at its preflight, and the token not readable.
        expect(attack).toEqual({
          formAnswered: true,
          noCors: "opaque",
          withHeader: "TypeError",
          readToken: "TypeError"
        })
        // What the admin port answered the posts it got: 403 each (the form's Origin null, the
        // fetch's other origin); the preflight of the fetch with the header is not allowed.
        const posts = answered.filter((a) => a.method === "POST")
        expect(posts.length).toBeGreaterThanOrEqual(1)
        expect(posts.every((a) => a.status === 403)).toBe(true)
        expect(answered.filter((a) => a.method === "OPTIONS").every((a) => a.status >= 400)).toBe(true)
        // Both were answered before these reads: nothing was sent, nothing armed.
        expect(receiver.received).toHaveLength(2)
        expect(yield* attempts).toBe(2)

        // The operator's own page still acts.
        yield* Effect.promise(() => tab.page.bringToFront())
        yield* tab.click("Redeliver")
        const third = yield* receiver.next
        expect(third).toMatchObject({ executionId, number: 3 })
        expect(JSON.parse(new TextDecoder().decode(third.rawBody)).data).toMatchObject({
          executionId,
          status: "completed"
        })
        yield* tab.waitUntil(
          "the notice says the redelivery started",
          (short: string) =>
            document.querySelector("[role='status'].notice")?.textContent?.includes(`Redelivery of run ${short}`) ===
              true,
          executionId.slice(-8)
        )
        // Delivered now: read again (every few seconds, or at once with Refresh), it is no longer listed.
        yield* tab.click("Refresh")
        yield* tab.waitUntil(
          "the delivery is no longer failed",
          (id: string) => document.querySelector(`tr[data-execution-id='${id}']`) === null,
          executionId
        )
        yield* tab.screenshot("operator-redelivered")
        expect(tab.errors).toEqual([])
      }),
    90_000
  )
})
