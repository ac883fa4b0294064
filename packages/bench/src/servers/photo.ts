/**
 * A local origin for the image and video benchmarks: one JPEG at `/photo.jpg` on 127.0.0.1, port
 * 0, so that an `input.url` fetches it over a real socket.
 */
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

/** Serves the JPEG that `make` draws at `/photo.jpg` (every path answers it); closed with the scope. */
export const serve = (make: () => Promise<Buffer>) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const jpeg = await make()
      const server = createServer((_req, res) => {
        res.writeHead(200, { "content-type": "image/jpeg", "content-length": String(jpeg.length) })
        res.end(jpeg)
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/photo.jpg` }
    }),
    ({ server }) => Effect.sync(() => server.close())
  )
