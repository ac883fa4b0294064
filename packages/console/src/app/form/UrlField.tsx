/**
 * A `url` parameter's field: the URL box, and beside it a file picker and a drop zone that upload
 * a file of the kinds the parameter accepts (`POST /v1/uploads`, docs/api.md#uploads); a file
 * pasted into the URL box is uploaded too. The upload shows a progress bar (with "Cancel upload"),
 * then a preview of the file and its name and size (with "Remove"); its signed URL becomes the
 * value. A refusal is said in words beside the field (with "Try again"). A URL typed instead
 * shows the media it points at once typing pauses.
 *
 * The picker is a native file input inside its label, so it opens by click, by keyboard and on a
 * phone, where `accept` (`image/*`, …) offers the camera and the gallery.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { isAbort } from "../api/Api.js"
import { isHttpUrl, useApi } from "../api/Remote.js"
import type { Parameter, Uploaded } from "../api/Wire.js"
import type { FieldAttributes } from "./TextField.js"
import {
  chooseLabel,
  kindOfType,
  kindsOf,
  misfit,
  pickerAccept,
  sizeText,
  type UploadProblem,
  uploadProblem
} from "./Uploads.js"

/** Where an upload of the field is. */
type UploadState =
  | { readonly phase: "idle" }
  | { readonly phase: "sending"; readonly file: File; readonly sent: number; readonly total: number }
  | { readonly phase: "done"; readonly file: File; readonly upload: Uploaded }
  | { readonly phase: "failed"; readonly file: File; readonly problem: UploadProblem }

/** A `blob:` URL of `file` while it is shown, revoked after. */
const useObjectUrl = (file: File | undefined): string | undefined => {
  const [url, setUrl] = useState<string | undefined>(undefined)
  useEffect(() => {
    if (file === undefined) return setUrl(undefined)
    const made = URL.createObjectURL(file)
    setUrl(made)
    return () => URL.revokeObjectURL(made)
  }, [file])
  return url
}

/** The media at `src` of `kind`, as a preview. */
const Media = (
  { kind, name, onError, src }: {
    readonly kind: string
    readonly src: string
    readonly name: string
    readonly onError?: () => void
  }
) =>
  kind === "video"
    ? <video class="preview" src={src} controls muted playsInline preload="metadata" aria-label={name} />
    : kind === "audio"
    ? <audio class="preview-audio" src={src} controls preload="metadata" aria-label={name} />
    : <img class="preview" src={src} alt={name} onError={onError} />

/** The media at a URL being typed, once typing pauses; a note when an image does not load. */
const TypedPreview = (
  { kinds, name, url }: { readonly url: string; readonly name: string; readonly kinds: ReadonlyArray<string> }
) => {
  const [shown, setShown] = useState<string | undefined>(undefined)
  const [broken, setBroken] = useState(false)
  useEffect(() => {
    const timer = setTimeout(() => {
      setBroken(false)
      setShown(isHttpUrl(url) ? url : undefined)
    }, 400)
    return () => clearTimeout(timer)
  }, [url])
  if (shown === undefined) return null
  const kind = kinds.includes("image") ? "image" : kinds[0] ?? "image"
  if (broken) return <p class="help">The image at this URL could not be loaded for a preview.</p>
  return <Media kind={kind} src={shown} name={`Preview of ${name}`} onError={() => setBroken(true)} />
}

/** The file being uploaded or uploaded, shown from the browser's own copy, and what is said of it. */
const FilePreview = ({ file, kind, name }: { readonly file: File; readonly kind: string; readonly name: string }) => {
  const src = useObjectUrl(file)
  return src === undefined ? null : <Media kind={kind} src={src} name={`${name}: ${file.name}`} />
}

/** The field of a `url` parameter named `name` (its human name). */
export const UrlField = (
  { attributes, name, notes, onInput, onUploading, parameter, value }: {
    readonly attributes: FieldAttributes
    readonly parameter: Parameter
    readonly name: string
    readonly value: string
    /** The field's help and problem, shown under the picker, before the upload. */
    readonly notes: ComponentChildren
    readonly onInput: (value: string) => void
    /** Told `true` when an upload starts and `false` when it is over, so the form waits for it. */
    readonly onUploading: (uploading: boolean) => void
  }
) => {
  const api = useApi()
  const kinds = kindsOf(parameter.accept)
  const [upload, setUpload] = useState<UploadState>({ phase: "idle" })
  const [over, setOver] = useState(false)
  const sending = useRef<AbortController | undefined>(undefined)
  const picker = useRef<HTMLInputElement>(null)

  // A file dropped beside the zone would make the browser leave the page to show it.
  useEffect(() => {
    const keep = (event: DragEvent) => {
      if (event.dataTransfer?.types.includes("Files") === true) event.preventDefault()
    }
    window.addEventListener("dragover", keep)
    window.addEventListener("drop", keep)
    return () => {
      window.removeEventListener("dragover", keep)
      window.removeEventListener("drop", keep)
      sending.current?.abort()
    }
  }, [])

  const stop = () => {
    sending.current?.abort()
    if (sending.current !== undefined) onUploading(false)
    sending.current = undefined
  }

  const start = (file: File) => {
    stop()
    const refused = misfit(file, kinds)
    if (refused !== undefined) return setUpload({ phase: "failed", file, problem: { said: refused } })
    const controller = new AbortController()
    sending.current = controller
    onUploading(true)
    setUpload({ phase: "sending", file, sent: 0, total: file.size })
    const onProgress = (sent: number, total: number) =>
      setUpload((current) =>
        current.phase === "sending" && current.file === file ? { ...current, sent, total } : current
      )
    api.uploads.create(file, { onProgress, signal: controller.signal }).then(
      (uploaded) => {
        if (controller.signal.aborted) return
        setUpload({ phase: "done", file, upload: uploaded })
        onInput(uploaded.url)
      },
      (error: unknown) => {
        if (controller.signal.aborted || isAbort(error)) return
        setUpload({ phase: "failed", file, problem: uploadProblem(error, file, kinds) })
      }
    ).finally(() => {
      if (sending.current !== controller) return
      sending.current = undefined
      onUploading(false)
    })
  }

  const statusId = `${attributes.id}-upload`
  const described = [attributes["aria-describedby"], statusId].filter((id) => id !== undefined).join(" ")
  const fromUpload = upload.phase === "done" && upload.upload.url === value

  return (
    <div class="url-field">
      <input
        {...attributes}
        aria-describedby={described}
        type="url"
        inputMode="url"
        enterKeyHint="go"
        placeholder={parameter.example ?? "https://…"}
        value={value}
        onInput={(event) => {
          if (upload.phase === "done" || upload.phase === "failed") setUpload({ phase: "idle" })
          onInput(event.currentTarget.value)
        }}
        onPaste={(event) => {
          const file = event.clipboardData?.files[0]
          if (file === undefined) return
          event.preventDefault()
          start(file)
        }}
      />
      <div
        class={over ? "drop-zone over" : "drop-zone"}
        data-testid="drop-zone"
        onDragEnter={(event) => {
          if (event.dataTransfer?.types.includes("Files") === true) setOver(true)
        }}
        onDragOver={(event) => {
          if (event.dataTransfer?.types.includes("Files") !== true) return
          event.preventDefault()
          event.dataTransfer.dropEffect = "copy"
          setOver(true)
        }}
        onDragLeave={(event) => {
          const to = event.relatedTarget
          if (!(to instanceof Node) || !event.currentTarget.contains(to)) setOver(false)
        }}
        onDrop={(event) => {
          event.preventDefault()
          setOver(false)
          const file = event.dataTransfer?.files[0]
          if (file !== undefined) start(file)
        }}
      >
        <label class="pick">
          <input
            ref={picker}
            class="visually-hidden"
            type="file"
            accept={pickerAccept(kinds)}
            aria-describedby={described}
            onChange={(event) => {
              const file = event.currentTarget.files?.[0]
              // The same file chosen again is a change too.
              event.currentTarget.value = ""
              if (file !== undefined) start(file)
            }}
          />
          {chooseLabel(kinds)}
        </label>
        <span class="drop-hint">or drop one here</span>
      </div>
      {notes}
      <p class="visually-hidden" role="status">
        {upload.phase === "sending"
          ? `Uploading ${upload.file.name}.`
          : fromUpload
          ? `${upload.file.name} uploaded; its URL is the value of ${name}.`
          : ""}
      </p>
      <div class="upload-status" id={statusId}>
        {upload.phase === "sending" && (
          <div class="upload-sending" data-testid="upload-progress">
            <FilePreview file={upload.file} kind={kindOfType(upload.file.type)} name={name} />
            <div class="upload-line">
              <progress
                max={Math.max(upload.total, 1)}
                value={upload.sent}
                aria-label={`Uploading ${upload.file.name}`}
              />
              <span class="percent">
                {Math.floor((100 * upload.sent) / Math.max(upload.total, 1))}%
              </span>
              <button
                type="button"
                class="quiet"
                onClick={() => {
                  stop()
                  setUpload({ phase: "idle" })
                }}
              >
                Cancel upload
              </button>
            </div>
            <p class="help">Uploading {upload.file.name} ({sizeText(upload.file.size)})…</p>
          </div>
        )}
        {upload.phase === "failed" && (
          <div class="upload-problem" role="alert" data-testid="upload-problem">
            <p class="field-problem">{upload.problem.said}</p>
            {upload.problem.detail !== undefined && <p class="help">{upload.problem.detail}</p>}
            {upload.problem.retry === true && (
              <button type="button" onClick={() => start(upload.file)}>
                Try again
              </button>
            )}
          </div>
        )}
        {fromUpload && (
          <figure class="upload-done" data-testid="upload-preview">
            <FilePreview file={upload.file} kind={kindOfType(upload.upload.contentType)} name={name} />
            <figcaption>
              <span class="upload-facts">
                <span class="upload-name">{upload.file.name}</span>
                <span class="help">
                  {sizeText(upload.upload.bytes)}, uploaded as {upload.upload.contentType}
                </span>
              </span>
              <button
                type="button"
                class="quiet"
                onClick={() => {
                  setUpload({ phase: "idle" })
                  onInput("")
                  picker.current?.focus()
                }}
              >
                Remove
              </button>
            </figcaption>
          </figure>
        )}
      </div>
      {upload.phase !== "sending" && !fromUpload && <TypedPreview url={value} name={name} kinds={kinds} />}
    </div>
  )
}
