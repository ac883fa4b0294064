/**
 * @appexec/nodes-image: the image node types, on sharp (`image.placeholder`, `image.resize`,
 * `image.convert`, `image.grayscale`, `image.blur`, `image.caption`, `image.animate`), and
 * `Imaging`, the sharp work they are written with.
 */
export * as ImageAnimate from "./ImageAnimate.js"
export * as ImageCaption from "./ImageCaption.js"
export * as ImageEdit from "./ImageEdit.js"
export * as ImageNodes from "./ImageNodes.js"
export { imageNodes } from "./ImageNodes.js"
export * as ImagePlaceholder from "./ImagePlaceholder.js"
export * as Imaging from "./Imaging.js"
