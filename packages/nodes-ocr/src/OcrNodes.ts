/**
 * The node types of `@appexec/nodes-ocr` (docs/nodes.md#imageocr-appexecnodes-ocr), to pass to
 * `AppexecLayer.make` or `TestHarness.layer` beside the built-in nodes, and the layer of what
 * they need besides: the OCR worker threads and their settings. The image input's bounds
 * (`NodesSettings`), the guarded outbound client, the media URLs and the blob store come from the
 * instance, as for the image nodes.
 */
import type { NodeType } from "@appexec/core"
import { type ConfigError, Layer } from "effect"
import { imageOcr } from "./ImageOcr.js"
import * as OcrPool from "./OcrPool.js"
import * as OcrSettings from "./OcrSettings.js"

/** Every node type of the package. */
export const ocrNodes = [imageOcr] as const

/** The services the OCR nodes need besides the storage ports and what the instance provides. */
export type Requirements = NodeType.NodeRequirements<(typeof ocrNodes)[number]>

/** The OCR worker threads and their settings (the defaults with `overrides`); the threads end with the layer's scope. */
export const layer = (
  overrides: Partial<OcrSettings.Settings> = {}
): Layer.Layer<OcrPool.OcrPool | OcrSettings.OcrSettings> =>
  OcrPool.layer.pipe(Layer.provideMerge(OcrSettings.layer(overrides)))

/**
 * As `layer`, the settings read from effect `Config` (`APPEXEC_OCR_*`, `OcrSettings.config`), for a
 * host configured by its environment; the `appexec` command reads the same variables (and its
 * `--ocr-*` flags and config file) through its settings.
 */
export const layerConfig: Layer.Layer<OcrPool.OcrPool | OcrSettings.OcrSettings, ConfigError.ConfigError> = OcrPool
  .layer.pipe(Layer.provideMerge(Layer.effect(OcrSettings.OcrSettings, OcrSettings.config)))
