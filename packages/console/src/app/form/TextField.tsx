/**
 * A `text` parameter's box, made not to fight the keyboard: one line unless the parameter is
 * `multiline` (or the value it starts with holds a line break), so Enter runs the form from a
 * single-line box and Ctrl+Enter (⌘+Enter) from a multi-line one, where Enter adds a line. The
 * parameter's `example` is the box's placeholder, never a value; a box that holds its `default`
 * untouched has it selected when it is entered, by keyboard or by a click, so typing replaces it.
 */
import { useRef, useState } from "preact/hooks"
import type { Parameter } from "../api/Wire.js"
import { isMultiline } from "./Inputs.js"

/** The attributes every field of the form shares (id, name, required, ARIA). */
export interface FieldAttributes {
  readonly id: string
  readonly name: string
  readonly required: boolean
  readonly "aria-describedby": string | undefined
  readonly "aria-invalid": true | undefined
}

/** Whether the page runs on a Mac, iPhone or iPad, where the key said is ⌘ rather than Ctrl. */
const onApple = () => /Mac|iPhone|iPad/.test(navigator.userAgent)

/** Submits the form `element` is in, as its submit button would (with the form's own checks). */
const submitFormOf = (element: HTMLElement) => {
  const form = element.closest("form")
  if (form === null) return
  const button = form.querySelector<HTMLButtonElement>("button[type='submit']")
  if (typeof form.requestSubmit === "function") form.requestSubmit(button ?? undefined)
  else button?.click()
}

/** The box of a `text` parameter. */
export const TextField = (
  { attributes, onInput, parameter, value }: {
    readonly attributes: FieldAttributes
    readonly parameter: Parameter
    readonly value: string
    readonly onInput: (value: string) => void
  }
) => {
  // Decided once: a box that changed kind under the cursor would lose the focus.
  const [multiline] = useState(() => isMultiline(parameter, value))
  // Whether the press of the mouse now under way is the one that entered the box.
  const entering = useRef(false)
  const holdsDefault = parameter.default !== undefined && parameter.default !== "" && value === parameter.default

  const selectDefault = (box: HTMLInputElement | HTMLTextAreaElement) => {
    if (holdsDefault) box.select()
  }
  const common = {
    ...attributes,
    value,
    placeholder: parameter.example,
    onInput: (event: { readonly currentTarget: HTMLInputElement | HTMLTextAreaElement }) =>
      onInput(event.currentTarget.value),
    onFocus: (event: { readonly currentTarget: HTMLInputElement | HTMLTextAreaElement }) =>
      selectDefault(event.currentTarget),
    onMouseDown: (event: { readonly currentTarget: HTMLInputElement | HTMLTextAreaElement }) => {
      entering.current = document.activeElement !== event.currentTarget
    },
    // A click places the caret after the focus selected the default: select it again, unless the
    // press dragged a selection of its own.
    onMouseUp: (event: { readonly currentTarget: HTMLInputElement | HTMLTextAreaElement }) => {
      const box = event.currentTarget
      if (entering.current && box.selectionStart === box.selectionEnd) selectDefault(box)
      entering.current = false
    }
  }

  if (!multiline) return <input {...common} type="text" enterKeyHint="go" autoComplete="off" />
  const keys = `${attributes.id}-keys`
  return (
    <>
      <textarea
        {...common}
        rows={3}
        aria-describedby={[attributes["aria-describedby"], keys].filter((id) => id !== undefined).join(" ")}
        aria-keyshortcuts="Control+Enter Meta+Enter"
        onKeyDown={(event) => {
          if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && !event.isComposing) {
            event.preventDefault()
            submitFormOf(event.currentTarget)
          }
        }}
      />
      <p class="help keys-hint" id={keys}>
        Enter adds a line; <kbd>{onApple() ? "⌘" : "Ctrl"}</kbd>+<kbd>Enter</kbd> runs.
      </p>
    </>
  )
}
