/**
 * The console's entry: mounts it in the page. The base path comes from the page
 * (`<meta name="appexec-base-path">`, written by the server that serves it), so the API is called
 * at the page's own origin under it.
 */
import { render } from "preact"
import { Console } from "./Console.js"
import "./styles.css"

const basePath = document.querySelector<HTMLMetaElement>("meta[name=\"appexec-base-path\"]")?.content ?? ""
const root = document.getElementById("app")
if (root !== null) {
  root.textContent = ""
  render(<Console basePath={basePath} />, root)
}
