/**
 * The API reference page at `/docs`: @effect/platform's Scalar page (`HttpApiScalar`) for the
 * API definition, with Scalar's script inline so the page needs nothing from the network (nor
 * Scalar's web fonts: `withDefaultFonts: false`). It is rendered once, through the router
 * @effect/platform serves it on, and kept as text, with the `Content-Security-Policy` made for it:
 * its inline scripts by their SHA-256 hashes and nothing else (Scalar compiles WebAssembly:
 * `'wasm-unsafe-eval'`, which lets no string run as script), styles of its own (Scalar adds
 * `<style>` elements as it renders), images of its own or `data:`, no frame around it
 * (`frame-ancestors 'none'`), no form, no `<base>`. The page's modules are loaded on the first
 * request for `/docs` only (the page is megabytes of script), by module path, so that a bundler
 * can leave them out of its bundle and load them from the installed @effect/platform then
 * (`appexec`'s bundle does).
 */
import { Api } from "@appexec/api"
import { sha256 } from "@noble/hashes/sha2.js"
import { Encoding } from "effect"

/** The page and its policy. */
export interface Rendered {
  readonly html: string
  readonly contentSecurityPolicy: string
}

/**
 * The inline scripts of `html`: each `<script>` element without attributes (the page's others are
 * JSON data, which a policy does not govern), up to its end tag.
 */
const inlineScripts = (html: string): ReadonlyArray<string> =>
  Array.from(html.matchAll(/<script>([\s\S]*?)<\/script>/gi), (m) => m[1]!)

/** The policy of a page whose inline scripts are `scripts`. */
const policyFor = (scripts: ReadonlyArray<string>): string =>
  [
    "default-src 'none'",
    `script-src ${
      scripts.map((script) => `'sha256-${Encoding.encodeBase64(sha256(new TextEncoder().encode(script)))}'`).join(" ")
    } 'wasm-unsafe-eval'`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'"
  ].join("; ")

/** The HTML of the page and its policy. */
export const render = async (): Promise<Rendered> => {
  const [HttpApiScalar, HttpLayerRouter] = await Promise.all([
    import("@effect/platform/HttpApiScalar"),
    import("@effect/platform/HttpLayerRouter")
  ])
  const { dispose, handler } = HttpLayerRouter.toWebHandler(
    HttpApiScalar.layerHttpLayerRouter({
      api: Api.AppexecApi,
      path: "/docs",
      scalar: { hideTestRequestButton: true, withDefaultFonts: false }
    }),
    { disableLogger: true }
  )
  try {
    const response = await handler(new Request("http://localhost/docs"))
    if (!response.ok) throw new Error(`the reference page answered ${response.status}`)
    const html = await response.text()
    return { html, contentSecurityPolicy: policyFor(inlineScripts(html)) }
  } finally {
    await dispose()
  }
}
