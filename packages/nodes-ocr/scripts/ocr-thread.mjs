/**
 * The script of an OCR worker thread (`OcrThread`): Tesseract's WebAssembly build
 * (`tesseract.js-core`, loaded from the absolute path given in `workerData.corePath`) reading
 * one image at a time, at a lower scheduling priority than the event loop's where the system
 * allows it. Nothing here reaches the network: the engine and the language data are read from
 * files. `ocr-thread-source.mjs` compiles it into the one string the pool evaluates
 * (`src/internal/OcrThreadSource.ts`).
 *
 * In: `{ image: { width, height, data }, language: { code, file } }`, an image in 8-bit grey
 * levels and the language's `.traineddata` (gzipped or not), loaded when it is not the one loaded
 * already. An image that is mostly dark is read inverted: Tesseract reads dark text on a light
 * ground best, and light text on a dark ground (a title on a picture) poorly. Out: `{ type: "ready" }` once
 * the engine is loaded; `{ type: "progress", percent }` while an image is read; then
 * `{ type: "read", tsv, confidence }` or `{ type: "failed", message }`.
 */
import { readFileSync, readlinkSync } from "node:fs"
import { createRequire } from "node:module"
import { setPriority } from "node:os"
import { parentPort, workerData } from "node:worker_threads"
import { gunzipSync } from "node:zlib"

/** Tesseract's LSTM engine alone (`OEM_LSTM_ONLY`): the data packages' networks, no legacy model. */
const LSTM_ONLY = 1
/** Progress is sent every this many percent (recognition reports 30 to 100). */
const PROGRESS_STEP = 5

/** The thread's scheduling priority (nice): below the event loop's, which answers HTTP. */
const NICE = 10

const messageOf = (error) => (error instanceof Error ? error.message : String(error))

// Reading is background work: on Linux this thread (its id read from /proc/thread-self) yields
// the CPU to the process's other threads when they want it. Elsewhere it runs at the process's
// priority.
try {
  setPriority(Number(readlinkSync("/proc/thread-self").split("/").pop()), NICE)
} catch {
  // No /proc, or a system that refuses: the default priority.
}
// The path is absolute: any base resolves it.
const factory = createRequire(`${process.cwd()}/`)(workerData.corePath)

let api
let loaded
let lastPercent = -1

/** Loads the language `{ code, file }` into `engine`, ending the previous one. */
const load = (engine, language) => {
  const raw = readFileSync(language.file)
  const data = raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw
  engine.FS.writeFile(`/${language.code}.traineddata`, data)
  api?.End()
  loaded = undefined
  api = new engine.TessBaseAPI()
  if (api.Init(null, language.code, LSTM_ONLY) !== 0) {
    throw new Error(`the data of language '${language.code}' could not be loaded`)
  }
  engine.FS.unlink(`/${language.code}.traineddata`)
  loaded = language.code
}

/** `image` as a binary PGM file (Netpbm P5), inverted when its mean grey level is below the middle. */
const pgmOf = ({ width, height, data }) => {
  let sum = 0
  for (let i = 0; i < data.length; i++) sum += data[i]
  const header = Buffer.from(`P5\n${width} ${height}\n255\n`)
  const file = new Uint8Array(header.length + data.length)
  file.set(header, 0)
  if (sum < data.length * 128) {
    for (let i = 0; i < data.length; i++) file[header.length + i] = 255 - data[i]
  } else {
    file.set(data, header.length)
  }
  return file
}

/** Reads the text of `image` in `language`: Tesseract's TSV (words with boxes and confidences) and its mean confidence. */
const read = (engine, { image, language }) => {
  if (api === undefined || loaded !== language.code) load(engine, language)
  engine.FS.writeFile("/input", pgmOf(image))
  lastPercent = -1
  try {
    if (api.SetImageFile(1, 0) === 1) throw new Error("the image could not be read")
    api.Recognize(null)
    return { type: "read", tsv: api.GetTSVText(), confidence: api.MeanTextConf() }
  } finally {
    api.Clear()
    engine.FS.unlink("/input")
  }
}

factory({
  // Tesseract's own lines (warnings about resolution and the like) are not appexec's output.
  print: () => {},
  printErr: () => {},
  TesseractProgress: (percent) => {
    if (percent >= lastPercent + PROGRESS_STEP || (percent === 100 && lastPercent !== 100)) {
      lastPercent = percent
      parentPort.postMessage({ type: "progress", percent })
    }
  }
}).then(
  (engine) => {
    parentPort.on("message", (message) => {
      let answer
      try {
        answer = read(engine, message)
      } catch (error) {
        answer = { type: "failed", message: messageOf(error) }
      }
      parentPort.postMessage(answer)
    })
    parentPort.postMessage({ type: "ready" })
  },
  (error) => parentPort.postMessage({ type: "failed", message: `the OCR engine could not start: ${messageOf(error)}` })
)
