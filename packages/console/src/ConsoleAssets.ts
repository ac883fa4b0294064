/**
 * The console as data: its page and the files the page loads (a script, a style sheet, an icon),
 * for a server to answer at `<base path>/console` without reading a file, on any runtime.
 * `@appexec/http` serves them (`ConsoleRoute`); a host that serves them itself reads the same.
 *
 * The files have content-hashed names and never change under them (`immutable`); the page names
 * them, so the page is the one answer a browser must check again. Nothing in the page is inline
 * (no script, no style), so it runs under a `Content-Security-Policy` of `'self'` alone.
 */
import * as Bundle from "./internal/Bundle.js"

/** The console's path under the base path of its host. */
export const PATH = "/console"

/** The prefix of its files under `PATH`. */
export const ASSETS = "/assets/"

/** One file of the console. */
export interface File {
  /** Its path under the console, e.g. `assets/app-3KQ2X4FD.js`. */
  readonly path: string
  readonly contentType: string
  /** Its content: text for the script, the style sheet and the SVG icon. */
  readonly body: string | Uint8Array
  /** Whether its content never changes under this path (a content-hashed name): cache it for good. */
  readonly immutable: boolean
}

/** Every file the page loads, by path under the console (`assets/…`). */
export const files: ReadonlyMap<string, File> = new Map(
  Bundle.files.map((
    file
  ) => [file.path, { path: file.path, contentType: file.contentType, body: file.text, immutable: true }])
)

/** The sizes of the script and the style sheet, in bytes: as served and gzipped. */
export const sizes: {
  readonly script: number
  readonly scriptGzip: number
  readonly style: number
  readonly styleGzip: number
} = Bundle.sizes

/** The Content-Security-Policy the page is made for: everything from its own origin, media from anywhere. */
export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' https: http: data: blob:",
  "media-src 'self' https: http: blob:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'"
].join("; ")

const escapeAttribute = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/**
 * Which console the page is: the workspace's (signed in with an API key, over `/v1`) or the
 * operator's (the admin port's views across workspaces, over its `/operator` endpoints, no key).
 */
export type Mode = "workspace" | "operator"

/**
 * The page's HTML for a console mounted under `basePath` (`""` or `/segment…`, no trailing
 * slash). The app reads the base path from the page (`<meta name="appexec-base-path">`) and calls
 * the API at the page's own origin under it; `mode` (`<meta name="appexec-console-mode">`) says
 * which console it is.
 */
export const page = (basePath: string, mode: Mode = "workspace"): string => {
  const base = escapeAttribute(basePath)
  const at = (path: string) => `${base}${PATH}/${escapeAttribute(path)}`
  return [
    "<!doctype html>",
    "<html lang=\"en\">",
    "<head>",
    "<meta charset=\"utf-8\">",
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
    `<meta name="appexec-base-path" content="${base}">`,
    `<meta name="appexec-console-mode" content="${mode}">`,
    `<title>appexec ${mode === "operator" ? "operator views" : "console"}</title>`,
    `<link rel="icon" type="image/svg+xml" href="${at(Bundle.entry.icon)}">`,
    `<link rel="stylesheet" href="${at(Bundle.entry.style)}">`,
    `<script type="module" src="${at(Bundle.entry.script)}"></script>`,
    "</head>",
    "<body>",
    "<div id=\"app\"><noscript>The appexec console needs JavaScript.</noscript></div>",
    "</body>",
    "</html>",
    ""
  ].join("\n")
}
