/**
 * The console's entry: mounts it in the page. The base path comes from the page
 * (`<meta name="appexec-base-path">`, written by the server that serves it), so the API is called
 * at the page's own origin under it; so does the mode (`<meta name="appexec-console-mode">`): the
 * workspace's console, or the operator views of the admin port.
 */
import { render } from "preact"
import { Console } from "./Console.js"
import { OperatorConsole } from "./pages/OperatorConsole.js"
import "./styles.css"
import "./form/fields.css"

const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content
const basePath = meta("appexec-base-path") ?? ""
const root = document.getElementById("app")
if (root !== null) {
  root.textContent = ""
  render(
    meta("appexec-console-mode") === "operator"
      ? <OperatorConsole basePath={basePath} />
      : <Console basePath={basePath} />,
    root
  )
}
