/**
 * A bare Node HTTP server for tests that attach their own handler once they know its origin (an
 * instance whose signed URLs name that origin): listening on 127.0.0.1, port 0, closed with the
 * scope, open connections included.
 */
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

/** The server, listening with no handler yet, and its origin. */
export const listening = Effect.gen(function*() {
  const server = createServer()
  yield* Effect.acquireRelease(
    Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
    () =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
})
