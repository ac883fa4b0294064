/**
 * The built console as data: content-hashed files with their content types, a page that loads
 * them under its base path and holds nothing inline (no script, no style) so that it runs under
 * the console's Content-Security-Policy, and an app whose sources never write HTML from strings
 * nor set a style through a string.
 */
import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { ConsoleAssets } from "../src/index.js"

const appDir = fileURLToPath(new URL("../src/app/", import.meta.url))
/** Every source of the app, in every folder under it. */
const sources = readdirSync(appDir, { recursive: true, encoding: "utf8" })
  .filter((name) => /\.tsx?$/.test(name))
  .map((name) => ({ name, text: readFileSync(`${appDir}${name}`, "utf8") }))

describe("the console's files", () => {
  it("are a script, a style sheet and an icon with content-hashed names and their content types", () => {
    const files = [...ConsoleAssets.files.values()]
    const byType = (type: string) => files.filter((f) => f.contentType === type)
    expect(byType("text/javascript; charset=utf-8").map((f) => f.path)).toEqual([
      expect.stringMatching(/^assets\/app-[A-Z0-9]{8}\.js$/)
    ])
    expect(byType("text/css; charset=utf-8").map((f) => f.path)).toEqual([
      expect.stringMatching(/^assets\/app-[A-Z0-9]{8}\.css$/)
    ])
    expect(byType("image/svg+xml").map((f) => f.path)).toEqual([
      expect.stringMatching(/^assets\/icon-[A-Z0-9]{8}\.svg$/)
    ])
    expect(files).toHaveLength(3)
    for (const file of files) {
      expect(file.immutable).toBe(true)
      expect(ConsoleAssets.files.get(file.path)).toBe(file)
      expect(typeof file.body === "string" ? file.body.length : file.body.byteLength).toBeGreaterThan(100)
    }
  })

  it("are small: the script is well under 150 KiB gzipped, and the sizes say so", () => {
    const script = [...ConsoleAssets.files.values()].find((f) => f.path.endsWith(".js"))!
    expect(ConsoleAssets.sizes.script).toBe(new TextEncoder().encode(script.body as string).length)
    expect(ConsoleAssets.sizes.scriptGzip).toBeGreaterThan(1_000)
    expect(ConsoleAssets.sizes.scriptGzip).toBeLessThan(150 * 1024)
    expect(ConsoleAssets.sizes.styleGzip).toBeLessThan(ConsoleAssets.sizes.style)
  })

  it("load nothing from another origin", () => {
    for (const file of ConsoleAssets.files.values()) {
      const text = String(file.body)
      expect(text).not.toMatch(/@import|url\(\s*["']?(https?:)?\/\//)
      expect(text).not.toMatch(/(src|href)=["']?https?:/)
    }
  })
})

describe("the page", () => {
  const page = ConsoleAssets.page("")

  it("loads the script as a module, the style sheet and the icon from the console's assets", () => {
    const [script, style, icon] = ["js", "css", "svg"].map((ext) =>
      [...ConsoleAssets.files.keys()].find((p) => p.endsWith(`.${ext}`))!
    )
    expect(page).toContain(`<script type="module" src="/console/${script}"></script>`)
    expect(page).toContain(`<link rel="stylesheet" href="/console/${style}">`)
    expect(page).toContain(`<link rel="icon" type="image/svg+xml" href="/console/${icon}">`)
    expect(page).toMatch(/^<!doctype html>\n<html lang="en">/)
    expect(page).toContain("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
    expect(page).toContain("<meta name=\"appexec-base-path\" content=\"\">")
  })

  it("holds no inline script, no style element, no style or event attribute", () => {
    for (const tag of page.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)) {
      expect(tag[0]).toMatch(/\ssrc="/)
      expect(tag[1]).toBe("")
    }
    expect(page).not.toMatch(/<style\b/i)
    expect(page).not.toMatch(/\sstyle=/i)
    expect(page).not.toMatch(/\son[a-z]+=/i)
    expect(page).not.toMatch(/javascript:/i)
  })

  it("names its files and the API under the base path, escaped", () => {
    const mounted = ConsoleAssets.page("/api")
    expect(mounted).toContain("<meta name=\"appexec-base-path\" content=\"/api\">")
    expect(mounted).toMatch(/src="\/api\/console\/assets\/app-[A-Z0-9]{8}\.js"/)
    const odd = ConsoleAssets.page("/a\"><script>x</script>")
    expect(odd).not.toContain("<script>x")
    expect(odd).toContain("content=\"/a&#34;&#62;&#60;script&#62;x&#60;/script&#62;\"")
  })

  it("is made for a strict Content-Security-Policy", () => {
    expect(ConsoleAssets.contentSecurityPolicy).toBe(
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' https: http: data: blob:; " +
        "media-src 'self' https: http: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; " +
        "form-action 'none'"
    )
  })
})

describe("the app's sources", () => {
  it("never write HTML from a string, nor a style from a string", () => {
    expect(sources.length).toBeGreaterThan(10)
    for (const { name, text } of sources) {
      expect(text, name).not.toMatch(/dangerouslySetInnerHTML|innerHTML|outerHTML|insertAdjacentHTML|document\.write/)
      expect(text, name).not.toMatch(/\sstyle=|setAttribute\(\s*["']style/)
      expect(text, name).not.toMatch(/\beval\(|new Function\(/)
    }
  })
})
