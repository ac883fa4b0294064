/**
 * One output of a run, shown by its type: an image as an image (its label as alt text), video and
 * audio in a player, text and JSON as text in a block, folded after about twenty lines
 * (`LongText`); never as HTML. Media load only from `http:`/`https:` URLs; any other value is
 * shown as text.
 */
import { isHttpUrl } from "../../api/Remote.js"
import type { Output } from "../../api/Wire.js"
import { LongText } from "../../components/LongText.js"

/** JSON text, indented; the text itself when it is not JSON. */
const prettyJson = (text: string) => {
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text
  }
}

const isMedia = (type: Output["type"]) => type === "image" || type === "video" || type === "audio"

const Value = ({ output }: { readonly output: Output }) => {
  const value = output.value
  if (output.status === "failed") {
    return <p class="notice error">{output.error ?? "This output was not produced."}</p>
  }
  if (output.status === "pending" || value === null) return <p class="pending">Not produced yet.</p>
  switch (output.type) {
    case "image":
      return isHttpUrl(value)
        ? (
          <a href={value} target="_blank" rel="noopener noreferrer" class="media-link">
            <img class="output-image" src={value} alt={output.label} />
          </a>
        )
        : <LongText className="output-text" text={value} />
    case "video":
      return isHttpUrl(value)
        ? <video class="output-media" src={value} controls preload="metadata" aria-label={output.label} />
        : <LongText className="output-text" text={value} />
    case "audio":
      return isHttpUrl(value)
        ? <audio src={value} controls preload="metadata" aria-label={output.label} />
        : <LongText className="output-text" text={value} />
    case "json":
      return <LongText className="output-text" text={prettyJson(value)} />
    default:
      return <LongText className="output-text" text={value} />
  }
}

/** The output with its label as a heading. */
export const OutputView = ({ output }: { readonly output: Output }) => (
  <article class="output" data-output={output.id} data-type={output.type} data-status={output.status}>
    <h3>{output.label}</h3>
    <Value output={output} />
    {isMedia(output.type) && output.status === "completed" && isHttpUrl(output.value) && (
      <p class="help">
        <a href={output.value} target="_blank" rel="noopener noreferrer">
          Open the {output.type}
        </a>
      </p>
    )}
  </article>
)
