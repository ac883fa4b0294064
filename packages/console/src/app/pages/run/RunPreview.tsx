/**
 * A running execution's newest live preview image (a ComfyUI sampler's frame), replaced as newer
 * ones come, its alt text naming the node that showed it; nothing once the run has ended (its
 * outputs show then) or before a preview came.
 */
import type { Preview } from "../../api/Wire.js"

/** The preview of a run still under way. */
export const RunPreview = (
  { finished, labelOf, preview }: {
    readonly preview: Preview | undefined
    readonly finished: boolean
    readonly labelOf: (nodeId: string) => string
  }
) => {
  if (preview === undefined || finished) return null
  return (
    <section aria-labelledby="preview-title" class="run-preview">
      <h2 id="preview-title">Preview</h2>
      <img
        class="output-image"
        data-testid="run-preview"
        data-node={preview.nodeId}
        src={preview.url}
        alt={`Live preview of ${labelOf(preview.nodeId)}`}
      />
    </section>
  )
}
