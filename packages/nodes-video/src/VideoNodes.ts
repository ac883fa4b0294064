/**
 * The video node types of `@appexec/nodes-video` (docs/nodes.md#video), on ffmpeg (the binary of
 * `@ffmpeg-installer/ffmpeg`, or `video.ffmpeg` / `APPEXEC_FFMPEG`) with frames drawn by sharp
 * (`@appexec/nodes-image`), to pass to `AppexecLayer.make` or `TestHarness.layer` as `nodes`
 * beside the lists of `@appexec/nodes` (`builtinNodes`) and `@appexec/nodes-image`. Their services
 * are the same as those nodes': `BuiltinNodes.layer` of `@appexec/nodes` gives them, its
 * `video` settings bounding their work.
 */
import type { NodeType } from "@appexec/core"
import type * as NodesSettings from "@appexec/nodes/NodesSettings"
import type { Effect } from "effect"
import { tmpdir } from "node:os"
import * as StaleWorkDirs from "./internal/StaleWorkDirs.js"
import { videoConvert } from "./VideoConvert.js"
import { videoFromImage } from "./VideoFromImage.js"
import { videoSlideshow } from "./VideoSlideshow.js"
import { videoThumbnail } from "./VideoThumbnail.js"

/**
 * The video node types, in the order they are documented. A new video node is one module (or a
 * folder, for a node of several parts) in `src/` and one entry here.
 */
export const videoNodes = [videoFromImage, videoSlideshow, videoThumbnail, videoConvert] as const

/** The services the video nodes need besides the storage ports and what the instance provides. */
export type Requirements = NodeType.NodeRequirements<(typeof videoNodes)[number]>

/**
 * Removes the temporary work directories that killed processes left in `video.tempDir` (the
 * system's when unset): those of a process of this host that is gone, and any older than twice
 * `video.timeoutMs` (docs/nodes.md#child-processes). `serve` and `worker` run it as they start;
 * answers the names removed.
 */
export const sweepStaleWorkDirs = (video: NodesSettings.VideoLimits): Effect.Effect<ReadonlyArray<string>> =>
  StaleWorkDirs.sweepNow(video.tempDir ?? tmpdir(), video.timeoutMs)
