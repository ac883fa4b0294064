/**
 * The test instance of `@appexec/nodes` (`nodes/test/support/Instance.ts`) with the image nodes
 * beside that package's own.
 */
import { builtinNodes } from "@appexec/nodes"
import { imageNodes } from "@appexec/nodes-image"
import * as Instance from "../../../nodes/test/support/Instance.js"

/** The instance with the nodes of `@appexec/nodes` and `@appexec/nodes-image`, and `options` as `Instance.layer` takes them. */
export const layer = (options: Omit<NonNullable<Parameters<typeof Instance.layer>[0]>, "nodes"> = {}) =>
  Instance.layer({ ...options, nodes: [...builtinNodes, ...imageNodes] })
