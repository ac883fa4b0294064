/**
 * The languages `image.ocr` reads: each is the data package `@tesseract.js-data/<code>` installed
 * beside appexec (English, `eng`, comes with `@appexec/nodes-ocr`; the operator installs others
 * with `npm install @tesseract.js-data/fra`). The package's `.traineddata` file is read from disk,
 * never fetched: a language whose package is not installed is refused, saying how to install it.
 */
import { Either, Schema } from "effect"
import { join } from "node:path"
import { packageRequire as load } from "./internal/PackageRequire.js"

/** A Tesseract language code: `eng`, `fra`, `chi_sim`. */
export const Code = Schema.String.pipe(
  Schema.pattern(/^[a-z]{3}(?:_[a-z]+)?$/, {
    message: () => "must be a Tesseract language code such as eng, fra or chi_sim"
  })
)

/** The language English, built in. */
export const ENGLISH = "eng"

/** A language ready to load: its code and its data file. */
export interface Language {
  readonly code: string
  /** The absolute path of its `.traineddata` file (gzipped when it ends in `.gz`). */
  readonly file: string
}

/** What a data package's main module exports (`@tesseract.js-data/eng`: `{ code, gzip, langPath }`). */
const DataPackage = Schema.Struct({ langPath: Schema.String, gzip: Schema.optional(Schema.Boolean) })

/** The name of the data package of `code`. */
export const packageOf = (code: string): string => `@tesseract.js-data/${code}`

/**
 * The language `code` from its installed data package, or the consumer's message saying it is
 * not installed and how to install it.
 */
export const resolve = (code: string): Either.Either<Language, string> => {
  const name = packageOf(code)
  const missing = Either.left(
    `the OCR language '${code}' is not installed on this instance: ` +
      `the operator installs it with npm install ${name} (English, eng, is built in)`
  )
  let exported: unknown
  try {
    exported = load(name)
  } catch {
    return missing
  }
  return Either.match(Schema.decodeUnknownEither(DataPackage)(exported), {
    onLeft: () => missing,
    onRight: (data) =>
      Either.right({ code, file: join(data.langPath, `${code}.traineddata${data.gzip === false ? "" : ".gz"}`) })
  })
}

/** The absolute path of Tesseract's engine, the WebAssembly build with SIMD of `tesseract.js-core` (Node 20 has SIMD). */
export const enginePath = (): string => load.resolve("tesseract.js-core/tesseract-core-simd-lstm")
