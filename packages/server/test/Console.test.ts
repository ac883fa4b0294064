/**
 * The console of `appexec serve` as a process on a real socket: on by default (the printed
 * address, `GET /` leading to `/console`, the page and its files with their headers), off with
 * `--no-console` (`GET /` leads to `/docs` as before, `/console` is no path).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { restartServe, startServe, tempDataDir } from "./support/ServeProcess.js"

const fetchAnswer = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url, { redirect: "manual" })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

describe("the console of appexec serve", () => {
  it.scoped(
    "is served at /console by default, where GET / leads; --no-console turns it off",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const serve = yield* startServe(dataDir)
        const [, printed] = yield* serve.waitFor(/Console: (http:\/\/127\.0\.0\.1:\d+\/console) /, "stderr")
        expect(printed).toBe(`${serve.baseUrl}/console`)
        const home = yield* fetchAnswer(`${serve.baseUrl}/`)
        expect(home.status).toBe(302)
        expect(home.headers.get("location")).toBe("/console")
        const page = yield* fetchAnswer(printed!)
        expect(page.status).toBe(200)
        expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
        expect(page.headers.get("content-security-policy")).toContain("script-src 'self'")
        expect(page.headers.get("x-content-type-options")).toBe("nosniff")
        expect(page.headers.get("referrer-policy")).toBe("no-referrer")
        const script = /src="(\/console\/assets\/app-\w+\.js)"/.exec(page.text)?.[1]
        expect(script).toBeDefined()
        const asset = yield* fetchAnswer(`${serve.baseUrl}${script}`)
        expect(asset.status).toBe(200)
        expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
        expect(asset.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
        serve.child.kill("SIGTERM")
        yield* serve.exited("15 seconds")

        const off = yield* restartServe(dataDir, ["--no-console"])
        expect(off.output.stderr).not.toContain("Console:")
        expect((yield* fetchAnswer(`${off.baseUrl}/`)).headers.get("location")).toBe("/docs")
        expect((yield* fetchAnswer(`${off.baseUrl}/console`)).status).toBe(404)
      }),
    60_000
  )
})
