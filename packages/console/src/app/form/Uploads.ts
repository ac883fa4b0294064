/**
 * Uploads from the form, apart from how they look (docs/api.md#uploads): what a `url` parameter's
 * file picker accepts, whether a file is of a kind the parameter takes, and what a refusal of the
 * server means, said in words. The request is `Api.uploads.create` (over `UploadRequest.send`).
 */
import { ApiError } from "../api/Api.js"

/** A file's name, size and type: what a message says of it. */
export interface FileFacts {
  readonly name: string
  readonly size: number
  readonly type: string
}

/** The kinds a `url` parameter takes: its `accept` (the server always gives it; `image` else). */
export const kindsOf = (accept: ReadonlyArray<string> | undefined): ReadonlyArray<string> =>
  accept === undefined || accept.length === 0 ? ["image"] : accept

/** The `accept` of a file picker for `kinds`: `image/*`, `image/*,video/*`, … (a phone then offers its camera). */
export const pickerAccept = (kinds: ReadonlyArray<string>): string => kinds.map((kind) => `${kind}/*`).join(",")

const nouns: Readonly<Record<string, readonly [string, string]>> = {
  image: ["an image", "images"],
  video: ["a video", "videos"],
  audio: ["an audio file", "audio files"]
}

const listed = (words: ReadonlyArray<string>) =>
  words.length <= 1 ? (words[0] ?? "") : `${words.slice(0, -1).join(", ")} or ${words[words.length - 1]}`

/** What to pick, for the picker's button: "Choose an image", "Choose an image or a video". */
export const chooseLabel = (kinds: ReadonlyArray<string>): string =>
  kinds.length === 1 && nouns[kinds[0]!] !== undefined ? `Choose ${nouns[kinds[0]!]![0]}` : "Choose a file"

/** The kind of a media type: `image` of `image/png`; empty for an empty type. */
export const kindOfType = (type: string): string => type.split("/")[0]?.toLowerCase() ?? ""

/**
 * Why `file` does not fit a parameter that takes `kinds`, before anything is sent: a dropped PDF
 * on an image's field, say. A file whose type the browser could not tell is left to the server.
 */
export const misfit = (file: FileFacts, kinds: ReadonlyArray<string>): string | undefined => {
  if (file.size === 0) return `${file.name} is empty: choose a file with something in it.`
  if (file.type === "" || kinds.includes(kindOfType(file.type))) return undefined
  const taken = listed(kinds.map((kind) => nouns[kind]?.[1] ?? `${kind} files`))
  return `This input takes ${taken}; ${file.name} is ${file.type}.`
}

/** A size in words: `812 bytes`, `48 KiB`, `3.2 MiB`. */
export const sizeText = (bytes: number): string =>
  bytes < 1024
    ? `${bytes} bytes`
    : bytes < 1024 * 1024
    ? `${Math.round(bytes / 1024)} KiB`
    : `${(bytes / 1024 / 1024).toFixed(bytes < 10 * 1024 * 1024 ? 1 : 0)} MiB`

/** A refusal said in words: a sentence for the person, and the server's own message where it adds to it. */
export interface UploadProblem {
  readonly said: string
  readonly detail?: string
  /** Whether sending the same file again may succeed (no answer came, the server was busy or failed). */
  readonly retry?: boolean
}

const declaredOf = (error: ApiError): { readonly declared?: string; readonly actual?: string } => {
  const first = error.details[0]
  if (typeof first !== "object" || first === null) return {}
  const declared = "declared" in first && typeof first.declared === "string" ? first.declared : undefined
  const actual = "actual" in first && typeof first.actual === "string" ? first.actual : undefined
  return { ...(declared === undefined ? {} : { declared }), ...(actual === undefined ? {} : { actual }) }
}

/** The media types a 415's message lists ("… one of: image/png, image/jpeg, …."), or none. */
const listedTypes = (message: string): ReadonlyArray<string> => {
  const found = /one of: ([\w.+-]+\/[\w.+-]+(?:, [\w.+-]+\/[\w.+-]+)*)\.?\s*$/.exec(message)
  return found === null ? [] : found[1]!.replace(/\.$/, "").split(", ")
}

/**
 * The types of `kinds` that the server said it takes, as a sentence ("Images it takes: image/png,
 * …"); the server's own message when it listed none of them.
 */
const takenText = (message: string, kinds: ReadonlyArray<string>): string => {
  const taken = listedTypes(message).filter((type) => kinds.includes(kindOfType(type)))
  if (taken.length === 0) return message
  const what = listed(kinds.map((kind) => nouns[kind]?.[1] ?? `${kind} files`))
  return `${what.charAt(0).toUpperCase()}${what.slice(1)} it takes: ${taken.join(", ")}.`
}

/**
 * What went wrong with the upload of `file` to a parameter that takes `kinds`, in words (the
 * statuses of docs/api.md#uploads).
 */
export const uploadProblem = (error: unknown, file: FileFacts, kinds: ReadonlyArray<string>): UploadProblem => {
  if (!(error instanceof ApiError)) {
    return {
      said: `${file.name} was not uploaded: ${error instanceof Error ? error.message : String(error)}`,
      retry: true
    }
  }
  const serverSaid = { detail: error.message }
  switch (error.status) {
    case 415: {
      const { actual, declared } = declaredOf(error)
      if (actual !== undefined) {
        return {
          said: `The server refused ${file.name}: it holds ${actual}, not ${declared ?? file.type} as its name says.`,
          ...serverSaid
        }
      }
      const detail = takenText(error.message, kinds)
      if (declared === undefined || declared === "" || declared === "application/octet-stream") {
        return { said: `The server refused ${file.name}: the browser could not tell what kind of file it is.`, detail }
      }
      return { said: `The server does not take ${declared} files, so ${file.name} was not uploaded.`, detail }
    }
    case 413:
      return { said: `${file.name} (${sizeText(file.size)}) is larger than this server takes.`, ...serverSaid }
    case 429:
      return { said: `The server is busy with other uploads: try ${file.name} again in a moment.`, retry: true }
    case 404:
      return {
        said: "This server takes no uploads (its media are published elsewhere): give a public URL instead.",
        ...serverSaid
      }
    case 0:
      return {
        said: `The upload of ${file.name} (${
          sizeText(file.size)
        }) was cut off before the server answered: the connection failed, or the file is larger than the server takes.`,
        retry: true
      }
    default:
      return { said: `${file.name} was not uploaded: ${error.message}`, retry: error.status >= 500 }
  }
}
