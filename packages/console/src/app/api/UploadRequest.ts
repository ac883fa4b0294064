/**
 * The request of an upload: a file's bytes as the body of a `POST`, sent with `XMLHttpRequest`
 * because `fetch` tells nothing of an upload's progress. `Api.uploads.create` makes it.
 */

/** What the server answered: its status (0 when no answer came), body text and `Retry-After`. */
export interface Answer {
  readonly status: number
  readonly text: string
  readonly retryAfter: string | null
}

/**
 * Sends `file` as the body of `POST url` with `headers`, telling `onProgress` the bytes sent so
 * far. Resolves with whatever the server answered, status 0 when no answer came (the connection
 * failed or was cut); rejects with an `AbortError` when `signal` aborts it.
 */
export const send = (
  url: string,
  headers: Readonly<Record<string, string>>,
  file: Blob,
  onProgress: (sent: number, total: number) => void,
  signal: AbortSignal | undefined
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const request = new XMLHttpRequest()
    const aborted = () => new DOMException("The upload was canceled.", "AbortError")
    if (signal?.aborted === true) return reject(aborted())
    request.open("POST", url)
    for (const [name, value] of Object.entries(headers)) request.setRequestHeader(name, value)
    request.upload.onprogress = (event) => onProgress(event.loaded, event.lengthComputable ? event.total : file.size)
    request.onload = () =>
      resolve({
        status: request.status,
        text: request.responseText,
        retryAfter: request.getResponseHeader("retry-after")
      })
    request.onerror = () => resolve({ status: 0, text: "", retryAfter: null })
    request.onabort = () => reject(aborted())
    signal?.addEventListener("abort", () => request.abort(), { once: true })
    request.send(file)
  })
