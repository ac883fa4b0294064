/** A piece of code with a button that copies it (the clipboard API), saying whether it did. */
import { useState } from "preact/hooks"

/** The button; `text` is what it copies. */
export const CopyButton = ({ label, text }: { readonly label: string; readonly text: string }) => {
  const [said, setSaid] = useState("")
  const copy = () => {
    const clipboard = navigator.clipboard as Clipboard | undefined
    if (clipboard === undefined) return setSaid("Copying is not allowed here: select the text below.")
    clipboard.writeText(text).then(
      () => setSaid("Copied."),
      () => setSaid("Copying was refused: select the text below.")
    )
  }
  return (
    <span class="copy">
      <button type="button" onClick={copy}>
        {label}
      </button>
      <span class="copy-said" role="status">
        {said}
      </span>
    </span>
  )
}
