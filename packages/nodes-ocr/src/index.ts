/**
 * @appexec/nodes-ocr: `image.ocr`, the text in an image read offline by Tesseract on worker
 * threads, English built in and other languages from their data packages.
 */
export * as ImageOcr from "./ImageOcr.js"
export * as Languages from "./Languages.js"
export * as OcrError from "./OcrError.js"
export * as OcrNodes from "./OcrNodes.js"
export { ocrNodes } from "./OcrNodes.js"
export * as OcrPool from "./OcrPool.js"
export * as OcrSettings from "./OcrSettings.js"
export * as Reading from "./Reading.js"
