/**
 * sharp, loaded on first use rather than at import: a process that runs no image node (every
 * `appexec` command but a serving one, a worker without image apps) never loads libvips.
 */
import { createRequire } from "node:module"
import type Sharp from "sharp"

const load = createRequire(import.meta.url)
let loaded: typeof Sharp | undefined

/** The sharp function. */
export const sharpModule = (): typeof Sharp => (loaded ??= load("sharp") as typeof Sharp)
