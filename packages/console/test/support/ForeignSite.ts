/**
 * A site of another origin that a browser's operator may visit while the admin port is open: a
 * second local server (`TestHttpServer`, 127.0.0.1, port 0), reached as `localhost` so that it is
 * another site than the admin port at 127.0.0.1, whose page tries to act on the admin port as a
 * page of another site can: a form posted from a sandboxed frame (`Origin: null`), a `fetch` in
 * `no-cors` mode (which sends without reading), a `fetch` that guesses the token header (which a
 * CORS preflight stops), and a read of `GET /operator` to learn the token (which the same-origin
 * policy keeps from it). The page sets `window.attack` once every attempt is over, with what the
 * page could see of each.
 */
import { TestHttpServer } from "@appexec/testing"
import { Effect } from "effect"

/** What the page could see of its attempts (`window.attack`). */
export interface Attack {
  /** Whether the frame loaded the form's answer (the post was sent and answered). */
  readonly formAnswered: boolean
  /** The `no-cors` fetch: `opaque` when sent and answered (the page cannot read the answer), else its error. */
  readonly noCors: string
  /** The fetch with the token header: its error (a failed preflight), or its status. */
  readonly withHeader: string
  /** The read of `GET /operator`: its error, or the token when the page could read it. */
  readonly readToken: string
}

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** The page attacking `target` (the redelivery URL of an execution on the admin port). */
const page = (target: string, operator: string) => {
  // The frame's document: a form that posts itself to the admin port once the frame has loaded.
  const frame = `<!doctype html><form method="POST" action="${escape(target)}"><input name="x" value="1"></form>` +
    `<script>addEventListener("load", () => document.forms[0].submit())</script>`
  return `<!doctype html>
<html><head><title>another site</title></head><body>
<iframe id="frame" sandbox="allow-forms allow-scripts" srcdoc="${escape(frame)}"></iframe>
<script>
const target = ${JSON.stringify(target)}
const operator = ${JSON.stringify(operator)}
const describe = (error) => String(error && error.name || error)
const formAnswered = new Promise((resolve) => {
  let loads = 0
  // The first load is the frame's own document, the second the answer to its form.
  document.getElementById("frame").addEventListener("load", () => { if (++loads === 2) resolve(true) })
})
const noCors = fetch(target, { method: "POST", mode: "no-cors", body: "x=1",
  headers: { "content-type": "application/x-www-form-urlencoded" } }).then((r) => r.type, describe)
const withHeader = fetch(target, { method: "POST", headers: { "x-appexec-action-token": "guessed" } })
  .then((r) => String(r.status), describe)
const readToken = fetch(operator).then((r) => r.json()).then((body) => String(body.data.actionToken), describe)
Promise.all([formAnswered, noCors, withHeader, readToken]).then(([formAnswered, noCors, withHeader, readToken]) => {
  window.attack = { formAnswered, noCors, withHeader, readToken }
})
</script>
</body></html>`
}

/**
 * The site, serving at `/` the page that attacks `target` (and reads `operator`, the admin port's
 * `GET /operator`), until the scope closes; its URL (`http://localhost:<port>/`).
 */
export const serve = (target: string, operator: string) =>
  Effect.gen(function*() {
    const { origin, server } = yield* TestHttpServer.listening
    const html = page(target, operator)
    server.on("request", (_request, response) => {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" })
      response.end(html)
    })
    return `${origin.replace("127.0.0.1", "localhost")}/`
  })
