/**
 * @appexec/nodes-video: the video node types, on ffmpeg (`video.fromImage`, `video.slideshow`,
 * `video.thumbnail`, `video.convert`), and the sweep of the work directories a killed process left.
 */
export * as VideoConvert from "./VideoConvert.js"
export * as VideoFromImage from "./VideoFromImage.js"
export * as VideoNodes from "./VideoNodes.js"
export { videoNodes } from "./VideoNodes.js"
export * as VideoSlideshow from "./VideoSlideshow.js"
export * as VideoThumbnail from "./VideoThumbnail.js"
