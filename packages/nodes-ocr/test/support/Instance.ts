/**
 * A whole appexec instance in memory with the built-in nodes, the image nodes (the Poster's
 * `image.placeholder`) and `image.ocr` (its worker threads as `settings` says, one by default),
 * the real guarded HTTP client (private networks allowed, so tests reach their origin on
 * 127.0.0.1) and signed media URLs; and a local origin serving images.
 */
import { Appexec, MediaUrls } from "@appexec/core"
import { BuiltinNodes, builtinNodes } from "@appexec/nodes"
import { imageNodes } from "@appexec/nodes-image"
import { OcrNodes, ocrNodes, type OcrSettings } from "@appexec/nodes-ocr"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { TestHarness } from "@appexec/testing"
import { Effect, Layer, Redacted } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

/** The instance, the OCR settings those of the tests (one thread) with `settings`. */
export const layer = (settings: Partial<OcrSettings.Settings> = {}) =>
  TestHarness.layer({
    nodes: [...builtinNodes, ...imageNodes, ...ocrNodes],
    outbound: NodeOutboundHttp.layer({ allowPrivateNetworks: true })
  }).pipe(
    Layer.provideMerge(
      BuiltinNodes.layer({
        mediaUrls: MediaUrls.layer({
          mode: "signed",
          baseUrl: "http://appexec.test/base",
          secret: Redacted.make("a test secret that is at least thirty-two bytes long")
        })
      })
    ),
    Layer.provideMerge(OcrNodes.layer({ threads: 1, ...settings }))
  )

/** Imports `definition` and starts it with `inputs` as a fresh user: the execution's id and who started it. */
export const start = (definition: unknown, inputs: Record<string, string>) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import({ public: true, ...(definition as object) })
    const principal = yield* TestHarness.signIn()
    const started = yield* appexec.executions.start(principal, app.appId, inputs)
    return { executionId: started.executionId, principal }
  })

/** Imports `definition`, starts it with `inputs` and waits for its end. */
export const run = (definition: unknown, inputs: Record<string, string>) =>
  Effect.gen(function*() {
    const { executionId } = yield* start(definition, inputs)
    return yield* (yield* Appexec.Appexec).executions.await(executionId)
  })

/**
 * A server on 127.0.0.1 (port 0) answering each path of `files` with its bytes and content type;
 * it stops with the scope. Answers the URL of a path.
 */
export const origin = (files: Readonly<Record<string, { readonly type: string; readonly bytes: Uint8Array }>>) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: (path: string) => string; readonly close: () => void }>((resume) => {
      const server = createServer((req, res) => {
        const file = files[req.url ?? ""]
        if (file === undefined) return res.writeHead(404).end()
        res.writeHead(200, { "content-type": file.type, "content-length": String(file.bytes.length) }).end(file.bytes)
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({
          url: (path: string) => `http://127.0.0.1:${port}${path}`,
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        }))
      })
    }),
    (server) => Effect.sync(server.close)
  )
