/**
 * A real Chromium for the console's browser tests, driven by `puppeteer-core`: the one that
 * `@sparticuz/chromium` ships inside its npm package, so `npm install` is all the set-up (Linux on
 * x64 and arm64), or a Chrome or Chromium of the developer's at `APPEXEC_CHROMIUM`. Without a
 * browser the tests fail and say what to do; they never skip.
 */
import chromium from "@sparticuz/chromium"
import { Context, Effect, type Either, Layer } from "effect"
import puppeteer, { type Browser } from "puppeteer-core"

/** The variable naming a browser executable to use instead of `@sparticuz/chromium`'s. */
export const OVERRIDE = "APPEXEC_CHROMIUM"

/**
 * The running browser, shared by the tests of a file (each test opens its own context,
 * `ConsolePage`), or why there is none: then each test fails with the reason, where a failed
 * set-up would have vitest list them as skipped.
 */
export class Chromium
  extends Context.Tag("@appexec/console/test/Chromium")<Chromium, Either.Either<Browser, Error>>()
{}

/**
 * Flags of `@sparticuz/chromium`'s (made for serverless functions) that these tests go without:
 * in one process Chromium closes every tab opened in a new browser context, and a person's
 * browser keeps the same-origin policy.
 */
const DROPPED = new Set(["--single-process", "--disable-web-security"])

/** The executable and its flags: the override (without the sandbox as root), or the packaged one with its flags. */
const executable = async (): Promise<{ readonly path: string; readonly args: ReadonlyArray<string> }> => {
  const own = process.env[OVERRIDE]
  if (own !== undefined && own !== "") return { path: own, args: process.getuid?.() === 0 ? ["--no-sandbox"] : [] }
  return { path: await chromium.executablePath(), args: chromium.args.filter((arg) => !DROPPED.has(arg)) }
}

const launch = Effect.tryPromise({
  try: async () => {
    const { args, path } = await executable()
    return puppeteer.launch({ executablePath: path, args: [...args], headless: true })
  },
  catch: (cause) =>
    new Error(
      "The console's browser tests found no browser to run. Chromium comes with `npm install` " +
        `(@sparticuz/chromium, on Linux x64 and arm64); elsewhere set ${OVERRIDE} to a Chrome or Chromium ` +
        `executable. The launch failed with: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause }
    )
})

/**
 * Unpacks `@sparticuz/chromium`'s browser into the temp directory, where it stays for later runs;
 * the console's global set-up calls it once, before the test files launch Chromium side by side
 * (two unpacking it at once trip on each other: `spawn ETXTBSY`). A failure here is left to the
 * tests to report.
 */
export const unpack = async (): Promise<void> => {
  if (!process.env[OVERRIDE]) await chromium.executablePath().catch(() => undefined)
}

/** Chromium launched for the layer's lifetime, closed with it. */
export const layer: Layer.Layer<Chromium> = Layer.scoped(
  Chromium,
  Effect.either(Effect.acquireRelease(launch, (browser) => Effect.promise(() => browser.close())))
)
