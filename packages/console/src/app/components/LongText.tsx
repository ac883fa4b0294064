/**
 * A text that may be long (an input, a text or JSON output): shown whole while it is short, cut
 * after about twenty lines otherwise, with "Show all" to unfold it (and "Show less" to fold it
 * again). Whether it is cut is read from the page (the text's height once laid out), so a long
 * line that wraps counts as the lines it takes.
 */
import { useLayoutEffect, useRef, useState } from "preact/hooks"

/** `text` in a block of class `className` (`pre` keeps its line breaks and spaces). */
export const LongText = (
  { className, text }: { readonly text: string; readonly className?: string }
) => {
  const block = useRef<HTMLPreElement>(null)
  const [open, setOpen] = useState(false)
  const [cut, setCut] = useState(false)
  useLayoutEffect(() => {
    const element = block.current
    if (element === null || open) return
    const measure = () => setCut(element.scrollHeight > element.clientHeight + 1)
    measure()
    const observer = new ResizeObserver(measure)
    observer.observe(element)
    return () => observer.disconnect()
  }, [text, open])
  const foldable = open || cut
  return (
    <div class="long-text" data-open={open} data-cut={foldable && !open}>
      <pre ref={block} class={`${className ?? ""} ${open ? "" : "folded"}`.trim()}>{text}</pre>
      {foldable && (
        <p class="unfold">
          <button type="button" class="quiet" aria-expanded={open} onClick={() => setOpen((o) => !o)}>
            {open ? "Show less" : "Show all"}
          </button>
          <span class="help">{text.length.toLocaleString()} characters</span>
        </p>
      )}
    </div>
  )
}
