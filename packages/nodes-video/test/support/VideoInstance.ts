/**
 * The test instance of `@appexec/nodes` (`nodes/test/support/Instance.ts`) with the video nodes
 * beside that package's own, each test's video work in a directory of its own, and a picture to
 * make videos of.
 */
import { builtinNodes, type NodesSettings } from "@appexec/nodes"
import { videoNodes } from "@appexec/nodes-video"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import sharp from "sharp"
import * as Instance from "../../../nodes/test/support/Instance.js"

/** The instance with the nodes of `@appexec/nodes` and `@appexec/nodes-video`, and `options` as `Instance.layer` takes them. */
export const layer = (options: Omit<NonNullable<Parameters<typeof Instance.layer>[0]>, "nodes"> = {}) =>
  Instance.layer({ ...options, nodes: [...builtinNodes, ...videoNodes] })

/** Runs `body` on an instance whose video work happens under a fresh directory, which must be empty after. */
export const withVideo = <A, E, R>(
  body: Effect.Effect<A, E, R>,
  video: Partial<NodesSettings.VideoLimits> = {}
) =>
  Effect.acquireUseRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-video-nodes-"))),
    (temp) =>
      body.pipe(
        Effect.provide(layer({ settings: { video: { tempDir: temp, ...video } } })),
        Effect.tap(() => expect(readdirSync(temp)).toEqual([]))
      ),
    (temp) => Effect.sync(() => rmSync(temp, { recursive: true, force: true }))
  )

/** A black 800×600 PNG with a white disc in its middle: a zoom into it shows more white. */
export const disc = Effect.promise(() =>
  sharp(
    Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" width="800" height="600"><rect width="800" height="600" fill="#000"/><circle cx="400" cy="300" r="90" fill="#fff"/></svg>`
    )
  )
    .png()
    .toBuffer()
)
