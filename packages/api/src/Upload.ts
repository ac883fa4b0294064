/**
 * An upload as the API answers it (docs/api.md#uploads): a file of the caller's, stored by the
 * instance, behind a signed media URL that any `url` input accepts until it expires.
 */
import { Schema } from "effect"
import { Timestamp } from "./Execution.js"

/** A stored upload. */
export const Upload = Schema.Struct({
  url: Schema.String.annotations({
    description:
      "A signed media URL of this instance: give it as the value of any `url` input (read from the instance's store, no download); a GET of it answers the bytes. Valid until `expiresAt`."
  }),
  contentType: Schema.String.annotations({ description: "The media type of the file, as its bytes show it." }),
  bytes: Schema.Number.pipe(Schema.int(), Schema.nonNegative()).annotations({ description: "Its size in bytes." }),
  expiresAt: Timestamp.annotations({
    description: "When the URL stops working; the file is deleted by retention after this."
  })
}).annotations({ identifier: "Upload" })
export type Upload = typeof Upload.Type
