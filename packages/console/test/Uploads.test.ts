/**
 * What the form's upload says and accepts, apart from the page (the browser tests upload for
 * real): the picker's `accept` and its button for a parameter's kinds, a file of the wrong kind
 * refused before it is sent, each refusal of the server (415, 413, 429, 404, no answer) said in
 * words with the server's own message beside it, and which of them "Try again" may mend.
 */
import { describe, expect, it } from "@effect/vitest"
import { ApiError, errorOfText } from "../src/app/api/Api.js"
import { chooseLabel, kindsOf, misfit, pickerAccept, sizeText, uploadProblem } from "../src/app/form/Uploads.js"

const photo = { name: "photo.png", size: 48_213, type: "image/png" }

describe("the form's uploads", () => {
  it("give the picker the kinds the parameter accepts, so that a phone offers its camera", () => {
    expect(pickerAccept(kindsOf(["image"]))).toBe("image/*")
    expect(pickerAccept(kindsOf(["image", "video"]))).toBe("image/*,video/*")
    expect(pickerAccept(kindsOf(undefined))).toBe("image/*")
    expect(chooseLabel(["image"])).toBe("Choose an image")
    expect(chooseLabel(["video"])).toBe("Choose a video")
    expect(chooseLabel(["image", "video"])).toBe("Choose a file")
  })

  it("refuse a file of another kind, or an empty one, before sending it; leave an untyped one to the server", () => {
    expect(misfit(photo, ["image"])).toBeUndefined()
    expect(misfit({ name: "notes.pdf", size: 900, type: "application/pdf" }, ["image"])).toBe(
      "This input takes images; notes.pdf is application/pdf."
    )
    expect(misfit({ name: "clip.mp4", size: 900, type: "video/mp4" }, ["image", "audio"])).toBe(
      "This input takes images or audio files; clip.mp4 is video/mp4."
    )
    expect(misfit({ name: "empty.png", size: 0, type: "image/png" }, ["image"])).toBe(
      "empty.png is empty: choose a file with something in it."
    )
    expect(misfit({ name: "photo.heic2", size: 10, type: "" }, ["image"])).toBeUndefined()
  })

  it("say each refusal of the server in words, its own message beside", () => {
    const answer = (status: number, code: string, message: string, details: ReadonlyArray<unknown> = []) =>
      errorOfText(status, JSON.stringify({ error: { code, message, details } }))
    // The messages of core's UnsupportedMedia, which list the types an upload may be.
    const types =
      "image/png, image/jpeg, image/gif, image/webp, image/avif, video/mp4, video/quicktime, video/webm, audio/mpeg"
    const unsupported = answer(
      415,
      "unsupported_media_type",
      `Uploads of 'image/svg+xml' are not accepted; Content-Type must be one of: ${types}.`,
      [{ declared: "image/svg+xml" }]
    )
    const svg = { name: "drawing.svg", size: 300, type: "image/svg+xml" }
    expect(uploadProblem(unsupported, svg, ["image"])).toEqual({
      said: "The server does not take image/svg+xml files, so drawing.svg was not uploaded.",
      detail: "Images it takes: image/png, image/jpeg, image/gif, image/webp, image/avif."
    })
    expect(uploadProblem(unsupported, svg, ["image", "video"]).detail).toBe(
      "Images or videos it takes: image/png, image/jpeg, image/gif, image/webp, image/avif, video/mp4, video/quicktime, video/webm."
    )
    expect(uploadProblem(unsupported, svg, ["audio"]).detail).toBe("Audio files it takes: audio/mpeg.")
    // A message that lists no type is given as it is.
    const terse = answer(415, "unsupported_media_type", "Not this type.", [{ declared: "image/svg+xml" }])
    expect(uploadProblem(terse, svg, ["image"]).detail).toBe("Not this type.")
    const mismatch = answer(
      415,
      "unsupported_media_type",
      "The bytes are image/jpeg, not image/png as Content-Type says: send the file's own type.",
      [{ declared: "image/png", actual: "image/jpeg" }]
    )
    expect(uploadProblem(mismatch, photo, ["image"])).toEqual({
      said: "The server refused photo.png: it holds image/jpeg, not image/png as its name says.",
      detail: "The bytes are image/jpeg, not image/png as Content-Type says: send the file's own type."
    })
    const untyped = answer(415, "unsupported_media_type", `Send the file's type as Content-Type, one of: ${types}.`, [
      { declared: "application/octet-stream" }
    ])
    expect(uploadProblem(untyped, photo, ["image"])).toEqual({
      said: "The server refused photo.png: the browser could not tell what kind of file it is.",
      detail: "Images it takes: image/png, image/jpeg, image/gif, image/webp, image/avif."
    })
    const large = answer(413, "payload_too_large", "The upload is larger than 25 MiB, the most this instance accepts.")
    expect(uploadProblem(large, { name: "film.mp4", size: 31 * 1024 * 1024, type: "video/mp4" }, ["video"])).toEqual({
      said: "film.mp4 (31 MiB) is larger than this server takes.",
      detail: "The upload is larger than 25 MiB, the most this instance accepts."
    })
    expect(uploadProblem(answer(429, "rate_limited", "Too many."), photo, ["image"])).toEqual({
      said: "The server is busy with other uploads: try photo.png again in a moment.",
      retry: true
    })
    expect(uploadProblem(answer(404, "not_found", "This instance takes no uploads."), photo, ["image"]).said).toBe(
      "This server takes no uploads (its media are published elsewhere): give a public URL instead."
    )
    const cut = uploadProblem(new ApiError(0, "network", "unreachable"), photo, ["image"])
    expect(cut.said).toBe(
      "The upload of photo.png (47 KiB) was cut off before the server answered: the connection failed, or the file is larger than the server takes."
    )
    expect(cut.retry).toBe(true)
    // A proxy's page instead of the API's error body still says the status.
    expect(uploadProblem(errorOfText(502, "<html>Bad gateway</html>"), photo, ["image"])).toEqual({
      said: "photo.png was not uploaded: The server answered 502.",
      retry: true
    })
  })

  it("say sizes in the unit that reads best", () => {
    expect([812, 48_213, 3.2 * 1024 * 1024, 31 * 1024 * 1024].map(sizeText)).toEqual([
      "812 bytes",
      "47 KiB",
      "3.2 MiB",
      "31 MiB"
    ])
  })
})
