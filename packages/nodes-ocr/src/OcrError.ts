/**
 * Why the OCR pool could not read an image: its engine failed (the thread could not start, the
 * image could not be read, the thread died) or the reading took longer than the time allowed.
 */
import { Schema } from "effect"

/** The pool's failure; `message` is fit for the consumer who gave the image. */
export class OcrError extends Schema.TaggedError<OcrError>()("OcrError", {
  reason: Schema.Literal("engine", "timeout"),
  message: Schema.String
}) {}
