#!/usr/bin/env node
/**
 * The console's pictures in docs/console/, made again: `npm run build`, then
 * `node scripts/console-screenshots.mjs`.
 *
 * Starts the compiled `appexec serve` on a temp data directory (the example apps, port 0, the admin
 * port with actions allowed, a webhook receiver of its own on 127.0.0.1 that refuses every
 * delivery), signs in with the key it prints and drives a real Chromium (the browser tests' own:
 * @sparticuz/chromium under puppeteer-core, or APPEXEC_CHROMIUM) through each view at 1280×800,
 * and some on a phone's screen (390×844, the whole page), writing one PNG a view:
 *
 * - `sign-in.png`: the sign-in view, the key typed;
 * - `apps.png`: the apps;
 * - `app.png`, `app-phone.png`: Ken Burns's page, its form beside its workflow (under it on a phone);
 * - `run-video.png`, `run-video-phone.png`: a finished Ken Burns run, its progress done, its video;
 * - `run-image.png`: a finished Poster run, its image shown;
 * - `run-running.png`: a Slow echo run under way, its progress bar moving;
 * - `run-canceled.png`: the same run canceled, its progress shown stopped;
 * - `run-long-input.png`: a run of a 99,999-character input, the input and the output folded (the
 *   whole page);
 * - `runs.png`, `runs-phone.png`: the runs, the failed ones selected to run again;
 * - `runs-again.png`: the runs they started, listed;
 * - `operator.png`, `operator-phone.png`: the operator views of the admin port: queues, workers,
 *   the last hour, the failed deliveries;
 * - `operator-redelivered.png`: the same after "Redeliver" on a failed delivery (refused again).
 *
 * Every wait is on something the page shows; any failure stops the script with what it waited for.
 */
import chromium from "@sparticuz/chromium"
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import puppeteer from "puppeteer-core"

const root = fileURLToPath(new URL("..", import.meta.url))
const bin = join(root, "packages/server/dist/appexec.js")
const out = join(root, "docs/console")
const data = mkdtempSync(join(tmpdir(), "appexec-screenshots-"))

/** The serve process (and the end of its log, shown on a failure), the browser, the receiver: stopped on every exit. */
let serve
let logged = ""
let browser
let receiver
const stop = async () => {
  await browser?.close().catch(() => {})
  serve?.kill("SIGKILL")
  receiver?.closeAllConnections()
  receiver?.close()
  rmSync(data, { recursive: true, force: true })
}

/** A webhook receiver on 127.0.0.1 that answers every delivery 500: its URL. */
const startReceiver = () =>
  new Promise((resolve) => {
    receiver = createServer((request, response) => {
      request.resume()
      request.on("end", () => response.writeHead(500).end("not today"))
    })
    receiver.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${receiver.address().port}/hooks/appexec`))
  })

/** `appexec serve` on the temp data directory: its base URL, printed key and admin URL. */
const startServe = () =>
  new Promise((resolve, reject) => {
    const args = ["serve", "--port", "0", "--data", data, "--admin-port", "0", "--admin-actions"]
    // The receiver is on 127.0.0.1; a delivery is tried twice, 10 ms apart, then it failed.
    args.push("--allow-private-networks", "--webhook-retry-delays", "10ms")
    serve = spawn(process.execPath, [bin, ...args], {
      env: { ...process.env, APPEXEC_LOG_FORMAT: "json" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let printed = ""
    let adminUrl
    // The key is printed on stdout; the admin port's address is a start-up line of the log (stderr).
    const ready = () => {
      const match = /curl -H 'x-api-key: (aex_[\w-]{43})' (http:\/\/127\.0\.0\.1:\d+)\/v1\/apps/.exec(printed)
      if (match !== null && adminUrl !== undefined) resolve({ key: match[1], baseUrl: match[2], adminUrl })
    }
    serve.stderr.setEncoding("utf8").on("data", (chunk) => {
      logged = `${logged}${chunk}`.slice(-20_000)
      adminUrl ??= /Operator views: (http:\/\/127\.0\.0\.1:\d+)\/console/.exec(logged)?.[1]
      ready()
    })
    serve.stdout.setEncoding("utf8").on("data", (chunk) => {
      printed += chunk
      ready()
    })
    serve.once("exit", (code) => reject(new Error(`appexec serve exited (${code}) before its key:\n${printed}`)))
  })

/** Chromium as the browser tests launch it (test/support/Chromium.ts says why two flags go). */
const launch = async () => {
  const own = process.env.APPEXEC_CHROMIUM
  const executablePath = own || (await chromium.executablePath())
  const args = own
    ? ["--no-sandbox"]
    : chromium.args.filter((a) => a !== "--single-process" && a !== "--disable-web-security")
  return puppeteer.launch({ executablePath, args, headless: true, defaultViewport: DESKTOP })
}

/** An ARIA query for the element of `role` named `name`. */
const aria = (role, name) => `::-p-aria([name=${JSON.stringify(name)}][role=${JSON.stringify(role)}])`

const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }

/** `frames` frames (two by default: what the page redraws on a new size, such as the workflow, is drawn by then). */
const settle = (page, frames = 2) =>
  page.$eval("html", (html, count) =>
    new Promise((resolve) => {
      const view = html.ownerDocument.defaultView
      const next = (left) => (left === 0 ? resolve() : view.requestAnimationFrame(() => next(left - 1)))
      next(count)
    }), frames)

/** The view at 1280×800 as `<name>.png`; the whole page with `fullPage`. */
const shoot = async (page, name, fullPage = false) => {
  const path = join(out, `${name}.png`)
  await page.screenshot({ path, type: "png", fullPage })
  console.log(`${path.slice(root.length)}: ${Math.round(statSync(path).size / 1024)} KiB`)
}

/** The view on a phone's screen, the whole page, as `<name>-phone.png`; then back at 1280×800. */
const shootPhone = async (page, name) => {
  await page.setViewport(PHONE)
  await settle(page)
  const width = await page.$eval("html", (html) => html.scrollWidth)
  if (width > PHONE.width) throw new Error(`${name} is ${width} pixels wide on a ${PHONE.width}-pixel screen`)
  const path = join(out, `${name}-phone.png`)
  await page.screenshot({ path, type: "png", fullPage: true })
  console.log(`${path.slice(root.length)}: ${Math.round(statSync(path).size / 1024)} KiB`)
  await page.setViewport(DESKTOP)
  await settle(page)
}

try {
  if (!statSync(bin, { throwIfNoEntry: false })) throw new Error(`${bin} is missing: run \`npm run build\` first`)
  mkdirSync(out, { recursive: true })
  const hook = await startReceiver()
  const { adminUrl, baseUrl, key } = await startServe()
  browser = await launch()
  const page = await browser.newPage()
  page.setDefaultTimeout(30_000)
  const api = (path, body) =>
    fetch(`${baseUrl}/v1${path}`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify(body)
    }).then((r) => r.json())
  const appIds = await fetch(`${baseUrl}/v1/apps`, { headers: { "x-api-key": key } })
    .then((r) => r.json())
    .then((body) => new Map(body.data.map((app) => [app.name, app.appId])))

  // A few runs for the list: two that complete (one with a webhook the receiver refuses), one that
  // fails (nothing answers at its image's address).
  await api(`/apps/${appIds.get("Greeting")}/executions?webhook=${encodeURIComponent(hook)}`, {
    inputs: { who: "Ada", tone: "formal" }
  })
  await api(`/apps/${appIds.get("Thumbnail")}/executions`, { inputs: { image: "http://127.0.0.1:9/photo.png" } })
  await api(`/apps/${appIds.get("Greeting")}/executions`, { inputs: { who: "Grace" } })

  await page.goto(`${baseUrl}/console`)
  await page.locator(aria("textbox", "API key")).fill(key)
  await shoot(page, "sign-in")
  await page.locator(aria("button", "Sign in")).click()
  await page.waitForSelector("ul[aria-label='Apps'] .app-card")
  await shoot(page, "apps")

  await page.locator(aria("link", "Ken Burns")).click()
  await page.waitForSelector("[data-testid='workflow-diagram']")
  await shoot(page, "app")
  await shootPhone(page, "app")

  await page.locator(aria("button", "Run")).click()
  await page.waitForSelector("[data-node='zoom'] progress")
  await page.waitForSelector("[data-testid='run-status'][data-status='completed']", { timeout: 120_000 })
  const frame = await page.waitForSelector("[data-output='poster'] img.output-image")
  await page.waitForFunction((img) => img.complete && img.naturalWidth > 0, {}, frame)
  const video = await page.waitForSelector("[data-output='video'] video")
  // Its first frame shown and its loading over, and the player's spinner faded out (about half a second).
  await page.waitForFunction((element) => element.readyState >= 2 && element.networkState !== 2, {}, video)
  await settle(page, 45)
  await shoot(page, "run-video")
  await shootPhone(page, "run-video")

  await page.locator(aria("link", "Apps")).click()
  await page.locator(aria("link", "Poster")).click()
  await page.waitForSelector("[data-testid='workflow-diagram']")
  await page.locator(aria("textbox", "Prompt")).fill("A lighthouse at dusk")
  await (await page.waitForSelector(aria("combobox", "Style"))).select("retro")
  await page.locator(aria("button", "Run")).click()
  await page.waitForSelector("[data-testid='run-status'][data-status='completed']")
  const poster = await page.waitForSelector("[data-output='poster'] img.output-image")
  await page.waitForFunction((img) => img.complete && img.naturalWidth > 0, {}, poster)
  await shoot(page, "run-image")

  await page.locator(aria("link", "Apps")).click()
  await page.locator(aria("link", "Slow echo")).click()
  await page.locator(aria("textbox", "Message")).fill("See you in thirty seconds")
  await page.locator(aria("button", "Run")).click()
  const bar = await page.waitForSelector("[data-node='wait'] progress")
  await page.waitForFunction((progress) => progress.value >= 0.2, {}, bar)
  await shoot(page, "run-running")
  await page.locator(aria("button", "Cancel")).click()
  await page.waitForSelector("[data-testid='run-status'][data-status='failed']")
  await page.waitForSelector("[data-node='wait'][data-stopped='true']")
  await shoot(page, "run-canceled")

  // A long paste: 99,999 characters of words, shown back by Greeting's template.
  const long = "All work and no play makes a very long input. ".repeat(2_500).slice(0, 99_999)
  const { data: started } = await api(`/apps/${appIds.get("Greeting")}/executions`, { inputs: { who: long } })
  await page.goto(`${baseUrl}/console/runs/${started.executionId}`)
  await page.waitForSelector("[data-testid='run-status'][data-status='completed']")
  await page.waitForSelector("[data-output='greeting'] .unfold button")
  await shoot(page, "run-long-input", true)

  await page.locator(aria("link", "Runs")).click()
  await page.waitForSelector("[data-testid='runs-table'] tbody tr[data-status='failed'] input[type='checkbox']")
  for (const box of await page.$$("[data-testid='runs-table'] tbody tr[data-status='failed'] input[type='checkbox']")) {
    await box.click()
  }
  await shoot(page, "runs")
  await shootPhone(page, "runs")
  await page.locator(aria("button", "Run again")).click()
  await page.waitForSelector("[data-testid='rerun-result'] a")
  const again = await page.$$eval(
    "[data-testid='rerun-result'] a",
    (links) => links.map((link) => link.getAttribute("href").split("/").pop())
  )
  for (const id of again) await page.waitForSelector(`[data-testid='runs-table'] tr[data-execution-id='${id}']`)
  await shoot(page, "runs-again")

  // The operator views, on the admin port: no key.
  await page.goto(`${adminUrl}/`)
  await page.waitForSelector("[data-testid='chart-throughput'] rect.bar")
  await page.waitForSelector("[data-testid='workers-table']")
  await page.waitForSelector("[data-testid='deliveries-table'] button")
  await shoot(page, "operator")
  await shootPhone(page, "operator")
  await page.locator(aria("button", "Redeliver")).click()
  await page.waitForSelector("#deliveries-title ~ .notice[role='status']")
  await page.$eval("#deliveries-title", (title) => title.scrollIntoView({ block: "start" }))
  await shoot(page, "operator-redelivered")
} catch (error) {
  console.error(
    `console-screenshots: FAILED: ${error instanceof Error ? error.stack : error}\n--- serve's log ---\n${logged}`
  )
  process.exitCode = 1
} finally {
  await stop()
}
