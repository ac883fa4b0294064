/**
 * What `image.ocr` yields: the text read in an image, and its lines and words with their boxes
 * (in pixels of the image as given, upright) and confidences (0 to 1). Built from Tesseract's TSV
 * answer: one row per block, paragraph, line and word, in reading order.
 */
import { Schema } from "effect"

/** A rectangle in pixels, from the top left corner of the image. */
export const Box = Schema.Struct({ x: Schema.Int, y: Schema.Int, width: Schema.Int, height: Schema.Int })
export type Box = typeof Box.Type

/** A word read, with how sure the engine is of it (0 to 1). */
export const Word = Schema.Struct({ text: Schema.String, confidence: Schema.Number, box: Box })
export type Word = typeof Word.Type

/** A line read: its words joined by spaces, its confidence the mean of theirs. */
export const Line = Schema.Struct({
  text: Schema.String,
  confidence: Schema.Number,
  box: Box,
  words: Schema.Array(Word)
})
export type Line = typeof Line.Type

/** The JSON value of `image.ocr`. */
export const Reading = Schema.Struct({
  /** The lines in reading order, one per line; paragraphs apart by an empty line. Empty when nothing was read. */
  text: Schema.String,
  /** The mean confidence of the words kept; 0 when none was. */
  confidence: Schema.Number,
  language: Schema.String,
  width: Schema.Int,
  height: Schema.Int,
  lines: Schema.Array(Line)
})
export type Reading = typeof Reading.Type

/** A line as the engine found it: every word, and the paragraph it belongs to. */
export interface FoundLine {
  /** The block and paragraph of the line (`"1.2"`): lines of one paragraph share it. */
  readonly paragraph: string
  readonly box: Box
  readonly words: ReadonlyArray<Word>
}

/** Levels of Tesseract's TSV rows. */
const LINE = 4
const WORD = 5

const boxOf = (fields: ReadonlyArray<string>): Box => ({
  x: Number(fields[6]),
  y: Number(fields[7]),
  width: Number(fields[8]),
  height: Number(fields[9])
})

/** Two decimals: confidences are not more precise than that. */
const rounded = (value: number) => Math.round(value * 100) / 100

/**
 * The lines of Tesseract's TSV answer (columns `level page block par line word left top width
 * height conf text`), each with its words, their confidences from 0–100 to 0–1; words of blank
 * text (the engine's empty cells) are left out.
 */
export const parseTsv = (tsv: string): ReadonlyArray<FoundLine> => {
  const lines: Array<{ paragraph: string; box: Box; words: Array<Word> }> = []
  for (const row of tsv.split("\n")) {
    const fields = row.split("\t")
    if (fields.length < 12) continue
    const level = Number(fields[0])
    if (level === LINE) {
      lines.push({ paragraph: `${fields[2]}.${fields[3]}`, box: boxOf(fields), words: [] })
    } else if (level === WORD && lines.length > 0) {
      const text = fields.slice(11).join("\t").trim()
      if (text !== "") {
        lines[lines.length - 1]!.words.push({ text, confidence: rounded(Number(fields[10]) / 100), box: boxOf(fields) })
      }
    }
  }
  return lines
}

/** A word that holds some letter or digit of any script. */
const HAS_LETTER_OR_DIGIT = /[\p{L}\p{N}]/u

const mean = (values: ReadonlyArray<number>) =>
  values.length === 0 ? 0 : rounded(values.reduce((sum, value) => sum + value, 0) / values.length)

/**
 * The reading of `found`: words below `minConfidence` are dropped (the engine's guesses at
 * texture and noise), and lines left without a letter or digit (a stray `:` or `—` found in a
 * picture); the text is the lines kept, one per line, an empty line between paragraphs.
 */
export const make = (options: {
  readonly found: ReadonlyArray<FoundLine>
  readonly minConfidence: number
  readonly language: string
  readonly width: number
  readonly height: number
}): Reading => {
  const kept = options.found
    .map((line) => ({ ...line, words: line.words.filter((word) => word.confidence >= options.minConfidence) }))
    .filter((line) => line.words.some((word) => HAS_LETTER_OR_DIGIT.test(word.text)))
  const lines = kept.map((line): Line => ({
    text: line.words.map((word) => word.text).join(" "),
    confidence: mean(line.words.map((word) => word.confidence)),
    box: line.box,
    words: line.words
  }))
  const text = lines
    .map((line, i) => (i > 0 && kept[i - 1]!.paragraph !== kept[i]!.paragraph ? `\n${line.text}` : line.text))
    .join("\n")
  return {
    text,
    confidence: mean(lines.flatMap((line) => line.words.map((word) => word.confidence))),
    language: options.language,
    width: options.width,
    height: options.height,
    lines
  }
}
